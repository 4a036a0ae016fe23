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
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

from kvconfig.errors import HooksFailed, KernelBlockSizeMismatch
from kvconfig.hooks._checks import mismatches, settle
from kvconfig.hooks._log import logger
from kvconfig.hooks._observe import finish
from kvconfig.hooks._session import SESSION, Session, SpeculatorRecord
from kvconfig.hooks._state import STATE, machinery_failed
from kvconfig.hooks._vllm import real_prepare

_FORCED: ContextVar[tuple[Any, tuple[int, ...]] | None] = ContextVar(
    "kvconfig_forced_kernel_block_sizes", default=None
)


def runner_sizes(kv_cache_config: Any, target_attn_groups: Any) -> list[int]:
    """The runner's kernel block sizes: recomputed from its attention groups, and
    checked against the list the runner holds when the hook runs inside its
    ``initialize_kv_cache``."""
    sizes = real_prepare(kv_cache_config, target_attn_groups)
    session = SESSION.get()
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
        name = f"speculator {type(self).__name__}"
        try:
            sizes = runner_sizes(kv_cache_config, target_attn_groups)
        except Exception as err:
            # vLLM's own set-up runs first: an error of vLLM's passes through as vLLM's
            result = original(*call, target_attn_groups, *args, **kwargs)
            if (session := SESSION.get()) is not None:
                session.speculator_failed = True
            machinery_failed(
                "recomputing the model runner's kernel block sizes for the speculator",
                f"the {name}'s kernel block sizes (not handed the runner's, not checked)",
                err,
            )
            return result
        handed = mode == "enforce"
        token = _FORCED.set((kv_cache_config, tuple(sizes))) if handed else None
        try:
            result = original(*call, target_attn_groups, *args, **kwargs)
        finally:
            if token is not None:
                _FORCED.reset(token)
        try:
            groups = getattr(self, "attn_groups", [])
            record = SpeculatorRecord(
                self, sizes, _speculator_vote(kv_cache_config, groups), handed
            )
            problems = [
                *mismatches(kv_cache_config, sizes, target_attn_groups, "model runner"),
                *mismatches(kv_cache_config, sizes, groups, name, context=target_attn_groups),
            ]
        except Exception as err:
            if (session := SESSION.get()) is not None:
                session.speculator_failed = True
            machinery_failed(
                "reading the speculator's attention groups after set_attn",
                f"the {name}'s kernel block sizes",
                err,
            )
            return result
        session = SESSION.get()
        if session is not None:
            session.records.append(record)
        settle(problems, mode)
        return result

    return set_attn


@contextlib.contextmanager
def kv_cache_session(runner: Any, version: str, *, profiling: bool = False) -> Iterator[Session]:
    """Around a runner's KV-cache initialisation: collect what the hooks see, then
    check, log and export the plan (``hooks._observe.finish``) if it succeeded."""
    session = Session(runner, version)
    token = SESSION.set(session)
    try:
        yield session
    finally:
        SESSION.reset(token)
    try:
        finish(session, profiling=profiling)
    except (KernelBlockSizeMismatch, HooksFailed):
        raise
    except Exception as err:
        machinery_failed(
            f"reading the plan off Model Runner {version.upper()}'s objects after "
            "initialize_kv_cache",
            "the start-up check of every attention group against the runner's kernel "
            "block sizes, kvconfig's own vote and the plan export",
            err,
        )


def _profiling(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    return bool(kwargs.get("is_profiling", args[0] if args else False))


def _wrap_initialize_kv_cache(original: Callable[..., Any], version: str) -> Callable[..., Any]:
    @functools.wraps(original)
    def initialize_kv_cache(self: Any, kv_cache_config: Any, *args: Any, **kwargs: Any) -> Any:
        if STATE.mode == "off":
            return original(self, kv_cache_config, *args, **kwargs)
        with kv_cache_session(self, version, profiling=_profiling(args, kwargs)):
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
