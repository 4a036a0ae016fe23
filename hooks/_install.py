"""Patching vLLM: what is patched, the checks made first, all-or-nothing with rollback.

Before anything is patched, every target and every vLLM function the wrappers rely on
is checked the way pluggy's ``_verify_hook`` checks a hook implementation: it must
exist and take the parameters the wrapper passes on (``inspect.signature``), and the
calls the hooks depend on must still be there (a function looked up as a module
global is in the caller's ``co_names``). If anything is off, nothing is patched:
``strict`` refuses to start (``HooksFailed``); ``enforce`` and ``warn`` fall back to
``warn`` with one ERROR saying what is unchecked, also in ``hooks.status().unchecked``.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kvconfig.hooks._log import logger
from kvconfig.hooks._state import STATE, SUPPORTED_VLLM_VERSIONS, machinery_failed, parse_mode

MARK = "__kvconfig_original__"
"""Attribute of every wrapper: the function it wraps."""


@dataclass(frozen=True, slots=True)
class Target:
    """One patched attribute: a module global, or a method defined on a class."""

    module: str
    owner: str | None
    attr: str
    params: tuple[str, ...]
    """The leading parameters the wrapper relies on, in order."""
    wrapper: str
    """Name of the wrapper factory in ``hooks._enforce``."""

    @property
    def name(self) -> str:
        """``module.Class.attr``."""
        return ".".join(p for p in (self.module, self.owner, self.attr) if p)


WORKER = "vllm.v1.worker"

TARGETS = (
    # init_attn_backend looks this up as a module global; the runner and every speculator
    # call it (vllm/v1/worker/gpu/attn_utils.py:init_attn_backend).
    Target(
        f"{WORKER}.gpu.attn_utils",
        None,
        "prepare_kernel_block_sizes",
        ("kv_cache_config", "attn_groups"),
        "wrap_prepare",
    ),
    # Every Model Runner V2 speculator that drafts with attention runs through it
    # (vllm/v1/worker/gpu/spec_decode/speculator.py:DraftModelSpeculator.set_attn).
    Target(
        f"{WORKER}.gpu.spec_decode.speculator",
        "DraftModelSpeculator",
        "set_attn",
        (
            "self",
            "model_state",
            "kv_cache_config",
            "block_tables",
            "target_input_buffers",
            "target_attn_groups",
        ),
        "wrap_set_attn",
    ),
    # KV-cache initialisation of Model Runner V2 (vllm/v1/worker/gpu/model_runner.py).
    Target(
        f"{WORKER}.gpu.model_runner",
        "GPUModelRunner",
        "initialize_kv_cache",
        ("self", "kv_cache_config", "is_profiling"),
        "wrap_initialize_kv_cache_v2",
    ),
    # ... and of Model Runner V1 (vllm/v1/worker/gpu_model_runner.py).
    Target(
        f"{WORKER}.gpu_model_runner",
        "GPUModelRunner",
        "initialize_kv_cache",
        ("self", "kv_cache_config", "is_profiling"),
        "wrap_initialize_kv_cache_v1",
    ),
)

#: Functions the wrappers call or rely on, with the parameters they pass.
USED: tuple[tuple[str, str | None, str, tuple[str, ...]], ...] = (
    (f"{WORKER}.utils", None, "prepare_kernel_block_sizes", ("kv_cache_config", "attn_groups")),
    (
        f"{WORKER}.utils",
        None,
        "select_common_block_size",
        ("kv_manager_block_size", "backends"),
    ),
    (
        f"{WORKER}.gpu.attn_utils",
        None,
        "init_attn_backend",
        ("kv_cache_config", "vllm_config", "device", "active_layer_names"),
    ),
    (f"{WORKER}.gpu_model_runner", "GPUModelRunner", "initialize_metadata_builders", ("self",)),
)

#: (module, owner, function, name): ``function`` must look ``name`` up at call time.
CALLS: tuple[tuple[str, str | None, str, str], ...] = (
    (f"{WORKER}.gpu.attn_utils", None, "init_attn_backend", "prepare_kernel_block_sizes"),
    (
        f"{WORKER}.gpu.spec_decode.speculator",
        "DraftModelSpeculator",
        "set_attn",
        "init_attn_backend",
    ),
    (f"{WORKER}.gpu.model_runner", "GPUModelRunner", "initialize_kv_cache", "set_attn"),
    (
        f"{WORKER}.gpu_model_runner",
        "GPUModelRunner",
        "initialize_metadata_builders",
        "initialize_attn_backend",
    ),
)

#: Fields of ``vllm.v1.worker.utils.AttentionGroup`` the checks read (and
#: ``kernel_block_size`` where the release has one: ``_vllm.actual_k``).
GROUP_FIELDS = ("backend", "layer_names", "kv_cache_spec", "kv_cache_group_id")


def _resolve(module: str, owner: str | None, attr: str) -> tuple[Any, Any]:
    """(owner object, the attribute as stored on it); raises LookupError with a reason."""
    try:
        mod = importlib.import_module(module)
    except Exception as err:
        raise LookupError(f"cannot import {module} ({type(err).__name__}: {err})") from err
    holder: Any = mod
    if owner is not None:
        holder = getattr(mod, owner, None)
        if not isinstance(holder, type):
            raise LookupError(f"{module}.{owner} is missing")
        if attr not in holder.__dict__:
            raise LookupError(f"{module}.{owner}.{attr} is missing")
        return holder, holder.__dict__[attr]
    if not hasattr(mod, attr):
        raise LookupError(f"{module}.{attr} is missing")
    return holder, getattr(mod, attr)


def _unwrapped(func: Any) -> Any:
    return getattr(func, MARK, func)


def _check_params(name: str, func: Any, params: tuple[str, ...]) -> str | None:
    func = _unwrapped(func)
    if not callable(func):
        return f"{name} is not callable"
    try:
        found = list(inspect.signature(func).parameters)
    except (TypeError, ValueError):
        return f"{name} has no readable signature"
    if found[: len(params)] != list(params):
        return f"{name} takes ({', '.join(found)}), expected ({', '.join(params)}, ...)"
    return None


def verify() -> list[str]:
    """Every reason the hooks cannot be installed on the vLLM found (empty: all is well)."""
    problems: list[str] = []

    def dotted(module: str, owner: str | None, attr: str) -> str:
        return ".".join(x for x in (module, owner, attr) if x)

    def calls(name: str, func: Any, callee: str) -> str | None:
        code = getattr(_unwrapped(func), "__code__", None)
        if code is None or callee not in code.co_names:
            return f"{name} no longer calls {callee}"
        return None

    checks: list[tuple[str, str, str | None, str, Callable[[str, Any], str | None]]] = [
        *(
            (t.name, t.module, t.owner, t.attr, functools.partial(_check_params, params=t.params))
            for t in TARGETS
        ),
        *(
            (dotted(m, o, a), m, o, a, functools.partial(_check_params, params=params))
            for m, o, a, params in USED
        ),
        *(
            (dotted(m, o, a), m, o, a, functools.partial(calls, callee=callee))
            for m, o, a, callee in CALLS
        ),
    ]
    for name, module, owner, attr, check in checks:
        try:
            _, func = _resolve(module, owner, attr)
        except LookupError as err:
            problems.append(str(err))
            continue
        if (problem := check(name, func)) is not None:
            problems.append(problem)
    try:
        utils = importlib.import_module(f"{WORKER}.utils")
        spec = importlib.import_module(f"{WORKER}.gpu.spec_decode.speculator")
        attn = importlib.import_module(f"{WORKER}.gpu.attn_utils")
        names = {f.name for f in dataclasses.fields(utils.AttentionGroup)}
        missing = [f for f in GROUP_FIELDS if f not in names]
        if missing:
            problems.append(f"AttentionGroup lacks {', '.join(missing)}")
        if getattr(spec, "init_attn_backend", None) is not attn.init_attn_backend:
            problems.append(
                "the speculator no longer calls vllm.v1.worker.gpu.attn_utils.init_attn_backend"
            )
    except Exception as err:
        problems.append(f"cannot inspect vLLM's worker utilities ({type(err).__name__}: {err})")
    return problems


def _apply(factories: dict[str, Callable[[Any], Any]]) -> None:
    """Patch every target or none: on any failure, undo what was done and re-raise."""
    done: list[tuple[Any, str, Any, str]] = []
    try:
        for t in TARGETS:
            holder, current = _resolve(t.module, t.owner, t.attr)
            original = _unwrapped(current)
            wrapper = factories[t.wrapper](original)
            setattr(wrapper, MARK, original)
            setattr(holder, t.attr, wrapper)
            done.append((holder, t.attr, original, t.name))
    except BaseException:
        _restore(done)
        raise
    STATE.patches = done


def _restore(patches: list[tuple[Any, str, Any, str]]) -> None:
    for holder, attr, original, _ in reversed(patches):
        setattr(holder, attr, original)


UNCHECKED_ALL = (
    "the kernel block size of every attention group, speculator and KV connector (the "
    "hooks are NOT installed; check the deployment with 'kvconfig lint')"
)


def _fall_back(reason: str, requested: str) -> None:
    """Nothing is patched: ``strict`` raises ``HooksFailed``; otherwise mode ``warn``."""
    STATE.mode = "warn"
    STATE.reason = reason
    machinery_failed(
        f"installing the vLLM hooks on vLLM {STATE.vllm_version} (kvconfig supports "
        f"{', '.join(SUPPORTED_VLLM_VERSIONS)})",
        UNCHECKED_ALL,
        LookupError(reason),
        mode=requested,
    )


def install_locked(mode: str | None) -> None:
    """``hooks.install`` under the lock."""
    requested = parse_mode(mode)
    STATE.requested = requested
    if requested == "off":
        uninstall_locked()
        STATE.mode = "off"
        STATE.reason = ""
        return
    if STATE.patches:
        STATE.mode = requested
        STATE.reason = ""
        _install_connectors()
        return
    try:
        import vllm

        STATE.vllm_version = str(getattr(vllm, "__version__", "unknown"))
    except Exception as err:
        STATE.mode = "off"
        STATE.reason = f"vLLM is not importable ({type(err).__name__}: {err})"
        machinery_failed("importing vLLM", UNCHECKED_ALL, err, mode=requested)
        return
    problems = verify()
    if problems:
        _fall_back("; ".join(problems), requested)
        return
    try:
        from kvconfig.hooks import _enforce

        _apply(_enforce.FACTORIES)
    except Exception as err:
        _fall_back(f"patching failed and was rolled back ({type(err).__name__}: {err})", requested)
        return
    STATE.mode = requested
    STATE.reason = ""
    _install_connectors()
    if STATE.vllm_version not in SUPPORTED_VLLM_VERSIONS:
        logger.warning(
            "kvconfig: vLLM %s is not a release the hooks were built for (%s); every patched "
            "signature checked out, so they are installed",
            STATE.vllm_version,
            ", ".join(SUPPORTED_VLLM_VERSIONS),
        )
    logger.info(
        "kvconfig: vLLM hooks installed, mode %s (KVCONFIG_MODE): %s",
        requested,
        ", ".join(p[3] for p in STATE.patches),
    )


# ---- KV connectors (hooks/_connectors/): checked on their own, after the targets above,
# so a vLLM without a connector module loses only these checks


def _install_connectors() -> None:
    """Patch the connectors; a failure is kvconfig's (``machinery_failed``): ``strict``
    removes every patch and refuses to start, ``enforce`` and ``warn`` log and go on
    without the connector checks."""
    try:
        from kvconfig.hooks import _connectors

        _connectors.install()
    except Exception as err:
        mode = STATE.mode
        if mode == "strict":
            uninstall_locked()
            STATE.requested = mode
        machinery_failed(
            "installing the KV-connector checks",
            "the KV connectors' kernel block size and the NIXL handshake (the other hooks "
            "are installed)",
            err,
            mode=mode,
        )


def _uninstall_connectors() -> None:
    import sys

    module = sys.modules.get("kvconfig.hooks._connectors")
    if module is not None:
        module.uninstall()


# ---- end of KV connectors


def uninstall_locked() -> None:
    """``hooks.uninstall`` under the lock."""
    _uninstall_connectors()
    _restore(STATE.patches)
    STATE.patches = []
    STATE.mode = "off"
