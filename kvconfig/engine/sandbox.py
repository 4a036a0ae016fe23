"""An engine child's containment (docs/security.md): the environment it gets (built here,
never inherited), its scratch folders, the command it runs, and finding and ending every
process it started."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

from kvconfig.engine.request import Request

#: Of the caller's environment, what every child keeps: the command search path (the C
#: compiler), the locale and the C compiler's name. Nothing else of it is passed on.
PASSED_ON = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "CC")

#: The caller's Hugging Face credentials and Hub address: passed on only with downloads.
DOWNLOAD_ONLY = ("HF_ENDPOINT", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")

#: Variables other than ``VLLM_*`` that change what vLLM's start-up builds: the devices, and
#: ``PYTHONHASHSEED``, the seed vLLM reads for its prefix-cache block hashes
#: (``init_none_hash``, ``vllm/v1/core/kv_cache_utils.py``), which KV-aware routers must
#: share. The child's interpreter itself ignores it (``python -I``).
LIBRARY_VARIABLES = ("CUDA_VISIBLE_DEVICES", "PYTHONHASHSEED")

#: Endings of ``VLLM_*`` names that name a file, folder, address or shared library: such a
#: variable never reaches a child (it would point vLLM outside the scratch folder).
OUTSIDE = (
    "PATH", "DIR", "DIRS", "ROOT", "FILE", "FOLDER", "CACHE", "URL", "URI", "HOST", "IP",
    "PORT", "ADDR", "ENDPOINT", "SO", "LIB", "SERVER", "MODELSCOPE",
)  # fmt: skip

#: Plan-changing flags whose names end like an outside word (``..._KV_CACHE``): they pass
#: (``tests/test_engine_containment.py`` checks every variable of ``PLAN_ENV`` passes).
FLAGS = frozenset({"VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE"})

SCRATCH_VARIABLE = "KVCONFIG_ENGINE_SCRATCH"
"""Set in every child to its scratch folder: whatever the child starts inherits it, so the
pool finds and ends them at close even if they left the child's session."""


def plan_variable(name: str, value: str) -> bool:
    """Whether a deployment's environment variable reaches vLLM's start-up in a child.

    Only variables that change the plan pass: ``VLLM_*`` (except those that name a file,
    folder, address or library, by name or by a value with a ``/``) and
    ``LIBRARY_VARIABLES``. Never ``LD_*``, ``PYTHON*``, proxies, ``HOME`` or anything else a
    deployment names."""
    if name in LIBRARY_VARIABLES:
        return "/" not in value
    if not name.startswith("VLLM_") or "/" in value or "\0" in value:
        return False
    return name in FLAGS or not any(name.endswith(f"_{end}") for end in OUTSIDE)


def _hub_cache() -> str:
    """The caller's Hugging Face hub cache folder (a child reads models by id from it)."""
    env = os.environ
    if env.get("HF_HUB_CACHE") or env.get("HUGGINGFACE_HUB_CACHE"):
        return env.get("HF_HUB_CACHE") or env["HUGGINGFACE_HUB_CACHE"]
    home = env.get("HF_HOME") or str(
        Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "huggingface"
    )
    return str(Path(home) / "hub")


def child_env(request: Request, scratch: Path) -> dict[str, str]:
    """A child's whole environment: the deployment's plan variables (``plan_variable``),
    kvconfig's own settings for the hooks, and every home, cache and temporary folder
    inside ``scratch``. Python's own variables are not used (the child runs ``-I``)."""
    env = {k: os.environ[k] for k in PASSED_ON if k in os.environ}
    env.update({k: v for k, v in request.env.items() if plan_variable(k, v)})
    env.update({k: v for k, v in request.settings.items() if k.startswith("KVCONFIG_")})
    home = scratch / "home"
    folders = {
        "HOME": home,
        "XDG_CACHE_HOME": home / ".cache",
        "XDG_CONFIG_HOME": home / ".config",
        "XDG_DATA_HOME": home / ".local" / "share",
        "XDG_STATE_HOME": home / ".local" / "state",
        "XDG_RUNTIME_DIR": scratch / "run",
        "TMPDIR": scratch / "tmp",
        "VLLM_CACHE_ROOT": scratch / "vllm",
        "VLLM_CONFIG_ROOT": scratch / "vllm-config",
        "VLLM_ASSETS_CACHE": scratch / "vllm" / "assets",
        "VLLM_RPC_BASE_PATH": scratch / "run",
        "TRITON_HOME": home,
        "TRITON_CACHE_DIR": scratch / "triton",
        "TORCHINDUCTOR_CACHE_DIR": scratch / "inductor",
        "TORCH_EXTENSIONS_DIR": scratch / "torch-extensions",
        "FLASHINFER_WORKSPACE_BASE": home,
        "CUDA_CACHE_PATH": scratch / "cuda",
        "NUMBA_CACHE_DIR": scratch / "numba",
        "MPLCONFIGDIR": scratch / "matplotlib",
        "HF_HOME": scratch / "huggingface",
    }
    for name, folder in folders.items():
        folder.mkdir(parents=True, exist_ok=True)
        env[name] = str(folder)
    env[SCRATCH_VARIABLE] = str(scratch)
    env["HF_HUB_CACHE"] = _hub_cache()
    env["KVCONFIG_MODE"] = "off" if request.hooks == "none" else request.hooks
    env.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    env["VLLM_NO_USAGE_STATS"] = "1"
    env["VLLM_DO_NOT_TRACK"] = "1"
    env["DO_NOT_TRACK"] = "1"
    env["VLLM_USE_MODELSCOPE"] = "False"
    env["TORCHDYNAMO_DISABLE"] = "1"
    if request.download:
        env.update({k: os.environ[k] for k in DOWNLOAD_ONLY if k in os.environ})
    else:
        for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
            env[name] = "1"
        # whatever still tries the network meets a closed port
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
            env[name] = "http://127.0.0.1:9"
        env["NO_PROXY"] = env["no_proxy"] = ""
    return env


def root() -> str:
    """The folder the running ``kvconfig`` package is imported from."""
    return str(Path(__file__).resolve().parents[2])


#: The child's command: Python isolated from every ``PYTHON*`` variable, the user's site
#: folder and the working folder (``-I``), writing no bytecode (``-B``), unbuffered;
#: kvconfig's root first on its path.
CHILD_CODE = (
    "import sys; sys.path.insert(0, sys.argv[1]); from kvconfig.engine.child import main; main()"
)


def processes_of(scratch: Path) -> list[int]:
    """Processes (other than this one) whose environment names ``scratch`` as their
    ``KVCONFIG_ENGINE_SCRATCH``: a child and everything it started, wherever they went."""
    marker = f"{SCRATCH_VARIABLE}={scratch}".encode()
    found = []
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                with open(f"/proc/{entry.name}/environ", "rb") as fh:
                    words = fh.read().split(b"\0")
            except OSError:
                continue
            if any(w == marker or w.startswith(marker + b"/") for w in words):
                found.append(int(entry.name))
    return found


def end_processes(scratch: Path) -> None:
    """Kill every process ``processes_of(scratch)`` finds (until none is left)."""
    for _ in range(50):
        pids = processes_of(scratch)
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)
