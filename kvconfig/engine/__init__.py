"""vLLM's own start-up, run on a CPU under an emulated NVIDIA GPU: ``--engine vllm``.

The offline resolver mirrors vLLM's rules; this mode runs vLLM's code itself, on the same
``vllm serve`` config or command, up to the allocated KV cache, and reads the plan off the
objects vLLM built. It is exact for any model the installed vLLM can build from its
``config.json``, takes seconds, and is the oracle the offline resolver is tested against.

* ``kvconfig.engine.pool``: child processes, their environment, timeouts (no vLLM here);
* ``kvconfig.engine.child``: the child's loop; ``emulate``: the GPU stand-ins;
  ``startup``: vLLM's start-up steps; ``readout``: the facts read off vLLM's objects
  (these import vLLM and run only in a child);
* ``kvconfig.engine.plan``: the facts in the plan's JSON shape, with findings.

Needs vLLM installed (``pip install 'kvconfig[vllm]'``) and a C compiler (for the stub
CUDA driver, built once). Never imported by ``kvconfig lint`` without ``--engine``.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kvconfig.errors import InputError
from kvconfig.plan.result import PlanResult

#: What ``torch.cuda`` calls each platform's GPU, and its memory in GiB (NVIDIA's data).
DEVICES: dict[str, tuple[str, int]] = {
    "A100": ("NVIDIA A100-SXM4-80GB", 80),
    "L40S": ("NVIDIA L40S", 48),
    "H100": ("NVIDIA H100 80GB HBM3", 80),
    "H200": ("NVIDIA H200", 141),
    "GH200": ("NVIDIA GH200 480GB", 96),
    "B200": ("NVIDIA B200", 180),
    "GB200": ("NVIDIA GB200", 186),
    "B300": ("NVIDIA B300", 288),
    "GB300": ("NVIDIA GB300", 279),
    "RTX PRO 6000": ("NVIDIA RTX PRO 6000 Blackwell Server Edition", 96),
}


@dataclass(frozen=True, slots=True)
class Target:
    """One deployment on one platform, as vLLM's start-up receives it."""

    source: str
    """What the user named (a file, or ``<command>``)."""
    argv: tuple[str, ...]
    """What follows ``vllm serve``."""
    cwd: str
    """Where vLLM starts (a serve config's folder: its relative paths resolve from it)."""
    platform: Any
    """A ``kvconfig.load.platforms.PlatformId``."""
    env: Mapping[str, str] = field(default_factory=dict)
    """The deployment's environment (only the variables that change the plan reach vLLM:
    ``kvconfig.engine.pool.plan_variable``)."""
    settings: Mapping[str, str] = field(default_factory=dict)
    """kvconfig's own ``KVCONFIG_*`` settings for the hooks, from the caller."""
    cubins: bool = True
    hooks: str = "none"
    download: bool = False


def available(python: str | None = None) -> str | None:
    """Why the engine mode cannot run here (None: it can). ``python``: the interpreter of
    the engine children (``--vllm-python``; default: kvconfig's own)."""
    if python is not None:
        if not (os.path.isfile(python) and os.access(python, os.X_OK)):
            return f"--vllm-python {python} is not an executable file"
        return None
    if importlib.util.find_spec("vllm") is None:
        return "vLLM is not installed (pip install 'kvconfig[vllm]')"
    return None


def _gpu(platform: Any) -> Any:
    from kvconfig.engine.pool import Gpu

    if platform.vendor != "cuda" or platform.capability is None:
        raise InputError(
            f"the engine mode emulates NVIDIA GPUs; {platform.name} is not one",
            key="--platform",
            hint="use --engine offline for this platform",
        )
    name, gib = DEVICES.get(platform.name, (f"NVIDIA {platform.name}", 80))
    return Gpu(name=name, capability=platform.capability, memory_bytes=gib * 1024**3)


def description(version: str | None, platform: Any) -> str:
    """``vllm VERSION start-up, emulated H100``."""
    return f"vllm {version or '?'} start-up, emulated {platform.name}"


def plans(
    targets: Sequence[Target],
    *,
    jobs: int = 1,
    timeout: float = 300.0,
    trust_remote_code: bool = False,
    python: str | None = None,
) -> list[PlanResult | InputError]:
    """The plan of each target from vLLM's start-up, or the InputError that stops it.

    vLLM runs code from a model's folder only with ``trust_remote_code`` (kvconfig's own
    ``--trust-remote-code``): a deployment that asks for it without gets KV901 and vLLM's
    own classes, or an input error when vLLM cannot build the model without its code.
    ``python``: the interpreter the engine children run (``--vllm-python``: the serving
    image's, with its vLLM); kvconfig's own by default."""
    why = available(python)
    if why is not None:
        raise InputError(
            f"--engine vllm needs vLLM: {why}", key="--engine", hint="or use --engine offline"
        )
    from kvconfig.engine import emulate
    from kvconfig.engine.plan import plan_result
    from kvconfig.engine.pool import Pool, Request

    requests = [
        Request(
            argv=t.argv,
            cwd=t.cwd,
            gpu=_gpu(t.platform),
            env=dict(t.env),
            settings=dict(t.settings),
            cubins=t.cubins,
            hooks=t.hooks,
            download=t.download,
        )
        for t in targets
    ]
    with Pool(
        jobs=jobs, timeout=timeout, trust_remote_code=trust_remote_code, python=python
    ) as pool:
        answers = pool.ask_all(requests)
    out: list[PlanResult | InputError] = []
    for t, answer in zip(targets, answers, strict=True):
        error = start_up_error(answer, t.source)
        if error is not None:
            out.append(error)
            continue
        plan = plan_result(
            answer,
            source=t.source,
            platform=t.platform,
            description=description(answer.vllm_version, t.platform),
            stood_in=emulate.STOOD_IN,
        )
        out.append(contained(plan, t.env, answer.data.get("remote_code") == "ignored"))
    return out


def start_up_error(answer: Any, source: str) -> InputError | None:
    """The input error of an engine child's answer that holds no plan (None: it holds one,
    vLLM's start-up went through or vLLM refused): vLLM cannot build the model without
    running code from its folder, which kvconfig's command line did not allow; the model's
    config lacks a field; vLLM's parser rejects the command; the child timed out, died or
    cannot drive this vLLM."""
    from kvconfig.engine.plan import incomplete_config

    missing = incomplete_config(answer)
    if (
        answer.data.get("remote_code") == "ignored"
        and answer.status == "refused"
        and "trust_remote_code" in str(answer.data.get("message"))
    ):
        return InputError(
            "vLLM cannot build this model without running code from its folder "
            "(trust_remote_code), and kvconfig runs no code from the files it reads",
            source=source,
            key="trust-remote-code",
            hint="if you trust the model folder, rerun with kvconfig's "
            "--trust-remote-code; or use --engine offline",
        )
    if missing is not None:
        return InputError(
            missing,
            source=source,
            key="model",
            hint="the file lacks a field vLLM's model code reads: use the model's "
            "complete config.json (as its Hugging Face repository has it)",
        )
    if answer.status in ("ok", "refused"):
        return None
    if answer.status == "arguments":
        return InputError(
            f"vLLM's parser rejects the command: {answer.data.get('message')}",
            source=source,
            hint="run the same arguments with 'vllm serve --help' to see what vLLM expects",
        )
    return InputError(
        str(answer.data.get("message")),
        source=source,
        key="--engine",
        hint="raise --engine-timeout, or run with --engine offline"
        if answer.status == "timeout"
        else "kvconfig's engine mode does not yet drive this vLLM release; use "
        "--engine offline, and please report it"
        if answer.status == "machinery"
        else "rerun with KVCONFIG_ENGINE_LOG=1 to keep the child's log",
    )


def contained(plan: PlanResult, env: Mapping[str, str], ignored: bool) -> PlanResult:
    """``plan`` with KV901 (the deployment's remote code not run, ``ignored``) and KV902
    (variables of ``env``, the deployment's environment, not passed on)."""
    from kvconfig.codes import FindingCode
    from kvconfig.engine.pool import plan_variable
    from kvconfig.plan.result import Found
    from kvconfig.plan.result import sort as sort_findings

    found = []
    if ignored:
        found.append(
            Found(
                FindingCode.REMOTE_CODE_IGNORED,
                None,
                "the deployment sets trust_remote_code; vLLM's start-up ran without it (no code "
                "from the model's folder) and built the model with vLLM's own classes",
                ("rerun with kvconfig's --trust-remote-code if you trust the model folder",),
            )
        )
    dropped = sorted(k for k, v in env.items() if not plan_variable(k, v))
    if dropped:
        found.append(
            Found(
                FindingCode.ENGINE_ENV_DROPPED,
                None,
                f"not passed to vLLM's start-up: {', '.join(dropped)} (only VLLM_* and library "
                "variables that change the plan, never paths, LD_* or PYTHON*)",
                (),
            )
        )
    if not found:
        return plan
    return plan._replace(findings=tuple(sort_findings([*plan.findings, *found])))


def both(offline: PlanResult, vllm: PlanResult) -> PlanResult:
    """vLLM's plan, with one KV602 finding per difference from the offline plan."""
    from kvconfig.codes import FindingCode
    from kvconfig.engine.compare import differences
    from kvconfig.plan.result import Found
    from kvconfig.plan.result import sort as sort_findings

    found = [
        Found(
            FindingCode.ENGINE_DIFFERS,
            None,
            f"kvconfig's offline plan differs from vLLM's start-up: {d} (vLLM's start-up is "
            "right; the offline resolver has a bug)",
            ("please report it with this deployment; meanwhile trust --engine vllm",),
        )
        for d in differences(offline.to_json(), vllm.to_json())
    ]
    return vllm._replace(findings=tuple(sort_findings([*vllm.findings, *found])))


def serve_config_target(path: str, platform: Any, **kw: Any) -> Target:
    """A ``vllm serve --config`` file: vLLM starts in the file's folder."""
    full = os.path.abspath(path)
    return Target(
        source=path, argv=("--config", full), cwd=os.path.dirname(full), platform=platform, **kw
    )


__all__ = [
    "DEVICES",
    "Target",
    "available",
    "both",
    "description",
    "plans",
    "serve_config_target",
]
