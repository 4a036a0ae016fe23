"""The connectors' block-size sync checked against the model runner's per-group votes.

``NixlBaseConnectorWorker._sync_block_size_with_kernel`` and
``MooncakeConnectorWorker._sync_block_size_with_kernel`` (vLLM's
``distributed/kv_transfer/kv_connector/v1/nixl/base_worker.py`` and
``.../mooncake/mooncake_connector.py``), wrapped.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from kvconfig.errors import ConnectorBlockSizeMismatch
from kvconfig.hooks._log import logger
from kvconfig.hooks._state import STATE, machinery_failed

UTILS = "vllm.distributed.kv_transfer.kv_connector.utils"


@dataclass
class Record:
    """What one connector worker of this process voted, and what it uses."""

    connector: str
    own: int
    """Its own vote over every transfer layer."""
    used: int
    """The kernel block size it transfers with (after the hooks)."""
    logical: int
    runner: dict[int, int] = field(default_factory=dict)
    """The runner's kernel block size per split transfer group."""
    handed: bool = False


RECORDS: list[Record] = []
"""The connector workers this process built (read by the digest export)."""


def _vote_of(worker: Any, block_size: int) -> int:
    """The connector's own vote, as its ``_sync_block_size_with_kernel`` runs it."""
    utils = importlib.import_module(UTILS)
    from vllm.v1.worker.utils import select_common_block_size

    fallback = getattr(worker, "attn_backends", None) or utils.get_current_attn_backends(
        worker.vllm_config
    )
    if not hasattr(utils, "get_current_attn_backends_and_specs"):
        # older releases: every attention layer's backend, asked without a spec
        return int(select_common_block_size(block_size, fallback))
    backends, specs = utils.get_current_attn_backends_and_specs(
        worker.vllm_config, worker.kv_cache_config, fallback
    )
    return int(select_common_block_size(block_size, backends, specs))


def _packed(kv_cache_config: Any, layers: set[str]) -> bool:
    return any(
        layers.intersection(t.layers) and t.block_stride > t.layer_stride
        for t in getattr(kv_cache_config, "kv_cache_tensors", ())
    )


def runner_votes(vllm_config: Any, kv_cache_config: Any) -> dict[int, int]:
    """The model runner's kernel block size per split transfer group: vLLM's
    ``select_common_block_size`` over that group's (backend, spec) pairs, as
    ``prepare_kernel_block_sizes`` votes it (state groups, groups without layer views and
    packed groups keep B and are left out)."""
    utils = importlib.import_module(UTILS)
    from vllm.v1.kv_cache_interface import AttentionSpec, UniformTypeKVCacheSpecs
    from vllm.v1.worker.utils import select_common_block_size

    out: dict[int, int] = {}
    for gid, group in enumerate(kv_cache_config.transfer_groups):
        spec = group.kv_cache_spec
        first = (
            next(iter(spec.kv_cache_specs.values()))
            if isinstance(spec, UniformTypeKVCacheSpecs)
            else spec
        )
        if not isinstance(first, AttentionSpec) or not first.has_layer_views:
            continue
        if _packed(kv_cache_config, set(group.layer_names)):
            continue
        if not hasattr(utils, "get_current_attn_backends_and_specs"):
            # older releases: the group's backends, asked without a spec
            backends = utils.get_current_attn_backends(vllm_config, list(group.layer_names))
            if backends:
                out[gid] = int(select_common_block_size(spec.block_size, backends))
            continue
        view = types.SimpleNamespace(transfer_groups=(group,))
        backends, specs = utils.get_current_attn_backends_and_specs(vllm_config, view, [])
        if backends:
            out[gid] = int(select_common_block_size(spec.block_size, backends, specs))
    return out


@contextlib.contextmanager
def _answering(module: Any, size: int) -> Iterator[None]:
    """The connector module's ``select_common_block_size`` answers ``size`` meanwhile."""
    real = module.select_common_block_size

    def handed(kv_manager_block_size: int, backends: Any, kv_cache_specs: Any = None) -> int:
        return size

    module.select_common_block_size = handed
    try:
        yield
    finally:
        module.select_common_block_size = real


def wrap_sync(original: Callable[..., Any], module: Any) -> Callable[..., Any]:
    """The connector's block-size sync, checked against the runner's per-group votes."""

    @functools.wraps(original)
    def _sync_block_size_with_kernel(self: Any) -> Any:
        mode = STATE.mode
        if mode == "off":
            return original(self)
        name = type(self).__name__
        try:
            logical = int(self.block_size)
            own = _vote_of(self, logical)
            runner = runner_votes(self.vllm_config, self.kv_cache_config)
        except Exception as failure:
            # vLLM's own sync runs first: if it raises too, that is vLLM's error and
            # passes through as vLLM's; if it does not, kvconfig's machinery failed
            result = original(self)
            machinery_failed(
                f"reading {name}'s and the model runner's kernel block sizes",
                f"the {name}'s kernel block size against the model runner's (and the "
                "NIXL handshake's page check)",
                failure,
            )
            return result
        differ = {g: k for g, k in runner.items() if k != own}
        values = set(runner.values())
        handed = False
        if differ and mode == "enforce" and len(values) == 1:
            with _answering(module, values.pop()):
                result = original(self)
            handed = True
        elif differ:
            gid, k = next(iter(differ.items()))
            group = self.kv_cache_config.transfer_groups[gid]
            err = ConnectorBlockSizeMismatch(
                group=gid,
                layers=list(group.layer_names),
                backends=[],
                block_size=int(group.kv_cache_spec.block_size),
                expected=k,
                found=own,
                component=name,
                mode=mode,
            )
            if mode == "strict":
                raise err
            logger.error("%s (KVCONFIG_MODE=%s: starting anyway)", err, mode)
            result = original(self)
        else:
            result = original(self)
        used = int(self.block_size)
        record = Record(name, own, used, logical, runner, handed)
        RECORDS.append(record)
        self.__dict__["_kvconfig_record"] = record
        logger.info(
            "kvconfig %s: %s pages %d x%d per %d-token block (own vote %d%s) | runner %s",
            mode,
            name,
            used,
            logical // used if used else 1,
            logical,
            own,
            ", the runner's handed over" if handed else "",
            ", ".join(f"group {g} k={k}" for g, k in runner.items()) or "-",
        )
        return result

    return _sync_block_size_with_kernel
