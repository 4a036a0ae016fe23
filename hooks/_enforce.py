"""The wrappers installed on vLLM, and the start-up check they run.

How the plan reaches the speculator (Model Runner V2):

* ``GPUModelRunner.initialize_kv_cache`` (``vllm/v1/worker/gpu/model_runner.py``) votes
  one kernel block size per KV-cache group over all layers, target and draft, through
  ``init_attn_backend`` -> ``prepare_kernel_block_sizes``, and allocates the KV cache
  with that list. It then calls ``DraftModelSpeculator.set_attn``
  (``vllm/v1/worker/gpu/spec_decode/speculator.py``), which runs ``init_attn_backend``
  again over the draft layers alone and keeps that vote.
* The wrapper on ``set_attn`` recomputes the runner's list from the runner's attention
  groups (``set_attn``'s last argument) with vLLM's own ``prepare_kernel_block_sizes``
  and, in ``enforce``, sets it in a context variable for the duration of the call.
* The wrapper on the ``prepare_kernel_block_sizes`` global of
  ``vllm/v1/worker/gpu/attn_utils.py`` (``init_attn_backend`` looks it up at call time)
  returns that list instead of voting, for that KV-cache config only. The speculator's
  attention groups then narrow the runner's value per backend in
  ``AttentionGroup.create_metadata_builders``, exactly as the runner's own groups do.
  Because the wrapper sits on ``DraftModelSpeculator``, it covers every subclass
  (EAGLE/EAGLE3, MTP, DFlash and its variants, the standalone draft model, ...),
  including those that override ``set_attn`` and call ``super()``.

After ``set_attn`` and again at the end of ``initialize_kv_cache`` (both runners), every
attention group, of the runner and of the speculator or V1 drafter, is checked: its
kernel block size must be what ``create_metadata_builders`` makes of the runner's value
for its backend. A group that differs raises ``KernelBlockSizeMismatch`` in ``enforce``
and ``strict`` (in ``warn`` it is logged), before ``init_kv_cache`` binds the cache and
long before the engine serves.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from hooks._log import logger
from hooks._state import STATE
from kvconfig.errors import KernelBlockSizeMismatch


@dataclass
class SpeculatorRecord:
    """One pass through the ``set_attn`` hook."""

    speculator: Any
    runner_sizes: list[int]
    own: list[int] | None
    """The speculator's own vote over its draft layers (None: it has no common size)."""
    handed: bool
    """Whether the runner's list was handed to it (``enforce``)."""


@dataclass
class Session:
    """One KV-cache initialisation of a model runner."""

    runner: Any
    kind: str
    """``v1`` or ``v2``."""
    records: list[SpeculatorRecord] = field(default_factory=list)


_FORCED: ContextVar[tuple[Any, tuple[int, ...]] | None] = ContextVar(
    "kvconfig_forced_kernel_block_sizes", default=None
)
_SESSION: ContextVar[Session | None] = ContextVar("kvconfig_kv_cache_session", default=None)


def real_prepare(kv_cache_config: Any, attn_groups: Any) -> list[int]:
    """vLLM's own ``prepare_kernel_block_sizes`` (``vllm/v1/worker/utils.py``)."""
    from vllm.v1.worker import utils

    return list(utils.prepare_kernel_block_sizes(kv_cache_config, attn_groups))


def flat(groups: Iterable[Any]) -> list[Any]:
    """Attention groups given per KV-cache group (lists) or flat (a V1 drafter's)."""
    out: list[Any] = []
    for g in groups:
        if isinstance(g, list | tuple):
            out.extend(g)
        else:
            out.append(g)
    return out


def actual_k(group: Any) -> int:
    """The kernel block size an attention group reads with (None in vLLM means B)."""
    k = group.kernel_block_size
    return int(k) if k is not None else int(group.kv_cache_spec.block_size)


def expected_k(group: Any, sizes: Sequence[int]) -> int:
    """What ``AttentionGroup.create_metadata_builders`` makes of the runner's value."""
    from vllm.v1.kv_cache_interface import AttentionSpec
    from vllm.v1.worker import utils

    spec = group.kv_cache_spec
    gid = group.kv_cache_group_id
    if gid >= len(sizes) or not isinstance(spec, AttentionSpec):
        return int(spec.block_size)
    try:
        return int(utils.select_common_block_size(sizes[gid], [group.backend], [spec]))
    except ValueError:
        return int(sizes[gid])


def declared(group: Any) -> list[Any]:
    """The sizes a group's backend declares for its layer spec."""
    try:
        return list(group.backend.get_supported_kernel_block_sizes(group.kv_cache_spec))
    except Exception:
        return []


def backend_text(group: Any) -> str:
    """``FLASHINFER [16, 32, 64]``."""
    sizes = ", ".join(repr(s) for s in declared(group))
    return f"{group.backend.get_name()} [{sizes}]"


def describe(kv_cache_config: Any, gid: int, groups: Iterable[Any]) -> tuple[list[str], list[str]]:
    """A KV-cache group's layers, and its backends with their sizes, for a message."""
    layers = list(kv_cache_config.kv_cache_groups[gid].layer_names)
    backends = dict.fromkeys(backend_text(g) for g in groups if g.kv_cache_group_id == gid)
    return layers, list(backends)


def mismatches(
    kv_cache_config: Any,
    sizes: Sequence[int],
    groups: Iterable[Any],
    component: str,
    context: Sequence[Any] = (),
) -> list[KernelBlockSizeMismatch]:
    """Every attention group in ``groups`` whose kernel block size is not the plan's."""
    checked = flat(groups)
    everyone = [*flat(context), *checked]
    found = []
    for g in checked:
        want, have = expected_k(g, sizes), actual_k(g)
        if want == have:
            continue
        gid = g.kv_cache_group_id
        layers, backends = describe(kv_cache_config, gid, everyone)
        found.append(
            KernelBlockSizeMismatch(
                group=gid,
                layers=layers,
                backends=backends,
                block_size=int(g.kv_cache_spec.block_size),
                expected=want,
                found=have,
                component=component,
                component_layers=list(g.layer_names),
                mode=STATE.mode,
            )
        )
    return found


def settle(problems: Sequence[KernelBlockSizeMismatch], mode: str) -> None:
    """Raise the first problem in ``enforce`` and ``strict``; log them all in ``warn``."""
    if not problems:
        return
    if mode in ("enforce", "strict"):
        for p in problems[1:]:
            logger.error("%s", p)
        raise problems[0]
    for p in problems:
        logger.error("%s (KVCONFIG_MODE=%s: starting anyway)", p, mode)


def runner_sizes(kv_cache_config: Any, target_attn_groups: Any) -> list[int]:
    """The runner's kernel block sizes: recomputed from its attention groups, and
    checked against the list the runner holds when the hook runs inside its
    ``initialize_kv_cache``."""
    sizes = real_prepare(kv_cache_config, target_attn_groups)
    session = _SESSION.get()
    held = getattr(session.runner, "kernel_block_sizes", None) if session else None
    if held is not None and list(held) != sizes:
        logger.error(
            "kvconfig: the model runner holds kernel block sizes %s but its attention groups "
            "vote %s; using the runner's (it allocated the KV cache)",
            list(held),
            sizes,
        )
        sizes = [int(k) for k in held]
    return sizes


def _speculator_vote(kv_cache_config: Any, attn_groups: Any) -> list[int] | None:
    try:
        return real_prepare(kv_cache_config, attn_groups)
    except ValueError:
        return None


def wrap_prepare(original: Callable[..., Any]) -> Callable[..., Any]:
    """``prepare_kernel_block_sizes`` in ``attn_utils``: the runner's list while forced."""

    @functools.wraps(original)
    def prepare_kernel_block_sizes(kv_cache_config: Any, attn_groups: Any) -> Any:
        forced = _FORCED.get()
        if forced is not None and forced[0] is kv_cache_config:
            return list(forced[1])
        return original(kv_cache_config, attn_groups)

    return prepare_kernel_block_sizes


def wrap_set_attn(original: Callable[..., Any]) -> Callable[..., Any]:
    """``DraftModelSpeculator.set_attn``: hand over the runner's list, then check."""

    @functools.wraps(original)
    def set_attn(  # noqa: PLR0917 - the signature of vLLM's set_attn
        self: Any,
        model_state: Any,
        kv_cache_config: Any,
        block_tables: Any,
        target_input_buffers: Any,
        target_attn_groups: Any,
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        call = (self, model_state, kv_cache_config, block_tables, target_input_buffers)
        mode = STATE.mode
        if mode == "off":
            return original(*call, target_attn_groups, *args, **kwargs)
        STATE.speculator_hooks += 1
        sizes = runner_sizes(kv_cache_config, target_attn_groups)
        handed = mode == "enforce"
        token = _FORCED.set((kv_cache_config, tuple(sizes))) if handed else None
        try:
            result = original(*call, target_attn_groups, *args, **kwargs)
        finally:
            if token is not None:
                _FORCED.reset(token)
        groups = getattr(self, "attn_groups", [])
        record = SpeculatorRecord(self, sizes, _speculator_vote(kv_cache_config, groups), handed)
        session = _SESSION.get()
        if session is not None:
            session.records.append(record)
        name = f"speculator {type(self).__name__}"
        problems = [
            *mismatches(kv_cache_config, sizes, target_attn_groups, "model runner"),
            *mismatches(kv_cache_config, sizes, groups, name, context=target_attn_groups),
        ]
        settle(problems, mode)
        return result

    return set_attn


@contextlib.contextmanager
def kv_cache_session(runner: Any, kind: str, *, profiling: bool = False) -> Iterator[Session]:
    """Around a runner's KV-cache initialisation: collect what the hooks see, then
    check, log and export the plan (``hooks._observe.finish``) if it succeeded."""
    session = Session(runner, kind)
    token = _SESSION.set(session)
    try:
        yield session
    finally:
        _SESSION.reset(token)
    from hooks._observe import finish

    finish(session, profiling=profiling)


def _profiling(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    return bool(kwargs.get("is_profiling", args[0] if args else False))


def _wrap_initialize_kv_cache(original: Callable[..., Any], kind: str) -> Callable[..., Any]:
    @functools.wraps(original)
    def initialize_kv_cache(self: Any, kv_cache_config: Any, *args: Any, **kwargs: Any) -> Any:
        if STATE.mode == "off":
            return original(self, kv_cache_config, *args, **kwargs)
        with kv_cache_session(self, kind, profiling=_profiling(args, kwargs)):
            return original(self, kv_cache_config, *args, **kwargs)

    return initialize_kv_cache


def wrap_initialize_kv_cache_v2(original: Callable[..., Any]) -> Callable[..., Any]:
    """Model Runner V2's ``GPUModelRunner.initialize_kv_cache``."""
    return _wrap_initialize_kv_cache(original, "v2")


def wrap_initialize_kv_cache_v1(original: Callable[..., Any]) -> Callable[..., Any]:
    """Model Runner V1's ``GPUModelRunner.initialize_kv_cache``."""
    return _wrap_initialize_kv_cache(original, "v1")


FACTORIES: dict[str, Callable[[Any], Any]] = {
    "wrap_prepare": wrap_prepare,
    "wrap_set_attn": wrap_set_attn,
    "wrap_initialize_kv_cache_v2": wrap_initialize_kv_cache_v2,
    "wrap_initialize_kv_cache_v1": wrap_initialize_kv_cache_v1,
}
