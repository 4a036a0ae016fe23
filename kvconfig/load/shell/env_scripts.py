"""Environment scripts of well-known tools, which launch scripts source from the machine
they run on: not in the input, but what each may set is fixed by the tool that writes it.

Sourcing a file kvconfig does not read leaves every variable to run time
(``kvconfig.load.shell.files``). These files are read as what they are: a Python virtual
environment's ``bin/activate`` changes the prompt and ``PATH`` and nothing a vLLM command
names, so ``vllm serve $MODEL`` after it keeps its known ``$MODEL``. Only the variables
each may set or unset stay unknown; a variable it may set that was not set before is
unknown too (``may_set``).

Sources, per script:

* Python's ``venv`` (CPython ``Lib/venv/scripts/common/activate``), ``virtualenv``
  (``src/virtualenv/activation/bash/activate.sh``) and ``uv`` (``uv-virtualenv``'s
  ``activator/activate``): ``VIRTUAL_ENV``, ``VIRTUAL_ENV_PROMPT``, ``PATH``, ``PS1``,
  ``PYTHONHOME`` (unset) and the ``_OLD_VIRTUAL_*`` copies; it defines ``deactivate``
  and ends in ``hash -r``, status 0. conda's ``bin/activate`` runs the environment's
  ``activate.d`` hooks, which may set anything: it is not one of these.
* rustup's ``~/.cargo/env`` (``src/cli/self_update/env.sh``) and the uv / Astral
  installer's ``~/.local/bin/env``: ``PATH`` only, status 0.
* Intel oneAPI's ``setvars.sh``: each component's ``env/vars.sh`` sets its search paths
  (``*PATH``), its root (``*ROOT``, ``ONEAPI_ROOT``) and its own prefixed variables
  (``I_MPI_*``, ``CCL_*``, ``FI_*``, ``SETVARS_*`` ...); its status is only known there.
* Huawei CANN's ``set_env.sh`` (``/usr/local/Ascend/ascend-toolkit``, from CANN 8.5
  ``/usr/local/Ascend/cann-VERSION`` as vLLM Ascend's scripts source it, ``nnal/atb``):
  ``ASCEND_*``, ``ATB_*``, ``TOOLCHAIN_HOME`` and search paths; status only known there.
* llm-d-benchmark's ``llmdbench_env.sh``, which its ``set_llmdbench_environment.py``
  (``llmdbenchmark/standup/preprocess``) writes for the vLLM pods it deploys: it sources
  ``/etc/os-release`` (the fields of os-release(5) and a distribution's own), exports
  ``NCCL_*``, ``UCX_*``, ``NVSHMEM_*``, ``GLOO_SOCKET_IFNAME``, ``SMOKETEST_IPS`` and
  ``START_RANK``, loops over ``BDF`` with ``acs_disable_failure``; and re-exports each
  ``VLLM_*`` variable whose value holds ``,,`` (a per-pod list of variants) as one of its
  parts: the first, or under a LeaderWorkerSet (``LWS_LEADER_ADDRESS`` set) the one of
  the pod's index, only known there (``variants``). Status only known there.
* OPEA GenAIComps' ``.github/env/_vllm_versions.sh``, which its test scripts source from
  ``$(git rev-parse --show-toplevel)``: the vLLM releases its images are built at
  (``VLLM_VER``, ``VLLM_FORK_VER``, ``VLLM_OPENVINO_VER``: exports only), status 0.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class EnvScript:
    """A tool's environment script: which sourced names it is, and what it may set."""

    what: str
    """What it is, for the report (``a Python virtual environment's activate script``)."""
    path: re.Pattern[str]
    """The name it is sourced by (searched in the name as written)."""
    sets: re.Pattern[str]
    """The variables it may set or unset (matched whole)."""
    status: int | None
    """Its status when sourced (None: only known where it runs)."""
    arguments: bool
    """Whether it may be given arguments (``setvars.sh --force``)."""
    variants: re.Pattern[str] | None = None
    """Variables it re-exports as one part of a ``,,``-separated value: the first part,
    or one only known at run time when ``LWS_LEADER_ADDRESS`` may be set."""


_SEARCH = (
    r"(LD_LIBRARY_|LIBRARY_|PYTHON|C|C_INCLUDE_|CPLUS_INCLUDE_|CMAKE_PREFIX_|PKG_CONFIG_|MAN"
    r"|INFO|NLS|CLASS)?PATH"
)
"""The search paths these scripts extend: the loader's, the compilers', Python's, CMake's,
pkg-config's, the manuals' and Java's (not a launch script's own ``MODEL_PATH``)."""
SCRIPTS = (
    EnvScript(
        "a Python virtual environment's activate script",
        re.compile(r"^(?!.*conda)(.*/)?bin/activate$"),
        re.compile(rf"VIRTUAL_ENV(_PROMPT)?|_OLD_VIRTUAL_\w+|PS1|PYTHONHOME|{_SEARCH}"),
        0,
        False,
    ),
    EnvScript(
        "rustup's environment script",
        re.compile(r"(^|/)\.cargo/env$"),
        re.compile("PATH"),
        0,
        False,
    ),
    EnvScript(
        "the uv installer's environment script",
        re.compile(r"(^|/)\.local/bin/env$"),
        re.compile("PATH"),
        0,
        False,
    ),
    EnvScript(
        "Intel oneAPI's setvars.sh",
        re.compile(r"(^|/)oneapi/setvars\.sh$"),
        re.compile(
            rf"{_SEARCH}|\w*ROOT|(ONEAPI|SETVARS|I_MPI|CCL|FI|MKL|TBB|DNNL|OCL|IPP|DAAL|CMPLR"
            r"|DPL|DPCT|INTEL|GDB|DIAGUTIL|SYCL|ZE|VTUNE|ADVISOR)_\w*"
        ),
        None,
        True,
    ),
    EnvScript(
        "Huawei CANN's set_env.sh",
        re.compile(
            r"(^|/)Ascend/(ascend-toolkit|cann(-[0-9][0-9A-Za-z.]*)?|nnal/atb|nnal/asdsip)"
            r"(/latest)?/set_env\.sh$"
        ),
        re.compile(rf"{_SEARCH}|\w*ROOT|\w*_HOME|(ASCEND|ATB|ASDSIP|TOOLCHAIN)_\w*"),
        None,
        True,
    ),
    EnvScript(
        "llm-d-benchmark's environment file (set_llmdbench_environment.py)",
        re.compile(r"(^|/)llmdbench_env\.sh$"),
        re.compile(
            r"(NCCL|UCX|NVSHMEM)_\w*|GLOO_SOCKET_IFNAME|SMOKETEST_IPS|START_RANK|BDF"
            r"|acs_disable_failure|NAME|ID|ID_LIKE|PRETTY_NAME|CPE_NAME|VARIANT|VARIANT_ID"
            r"|VERSION|VERSION_ID|VERSION_CODENAME|BUILD_ID|IMAGE_ID|IMAGE_VERSION|\w+_URL"
            r"|SUPPORT_END|LOGO|ANSI_COLOR|VENDOR_NAME|DEFAULT_HOSTNAME|ARCHITECTURE"
            r"|(SYS|CONF)EXT_(LEVEL|SCOPE)|PORTABLE_PREFIXES|PLATFORM_ID"
            r"|(UBUNTU|DEBIAN|REDHAT|CENTOS|ROCKY|ALMALINUX|ORACLE|SUSE|OPENSUSE)_\w+"
        ),
        None,
        False,
        re.compile(r"\w*VLLM_\w*"),
    ),
    EnvScript(
        "OPEA's vLLM release pins (.github/env/_vllm_versions.sh)",
        re.compile(r"(^|/)\.github/env/_vllm_versions\.sh$"),
        re.compile(r"VLLM_\w*VER"),
        0,
        False,
    ),
)


def env_script(name: str, arguments: int, late: bool = False) -> EnvScript | None:
    """The well-known environment script sourced as ``name`` with ``arguments``, if any.
    For a name only known at run time (``late``, written as what it names:
    ``$BASE/venv/bin/activate``), the known text after its last run-time part must name
    it, a folder of its own included (``$VENV/bin/activate`` may be conda's)."""
    if late:
        tail = name[name.rfind("$") :].partition("/")[2]
        if "$" not in name or not tail or "$" in tail or "`" in tail or tail.startswith("bin/"):
            return None
        name = "/" + tail
    for script in SCRIPTS:
        if script.path.search(name) and (arguments == 0 or script.arguments):
            return script
    return None


__all__ = ["SCRIPTS", "EnvScript", "env_script"]
