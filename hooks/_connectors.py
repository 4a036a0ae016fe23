"""The KV connectors as checked components, the handshake refusal, the plan digest.

Installed beside the hooks' other patches (``hooks._install``), on their own: a vLLM
without a connector module, or one whose signatures changed, loses only these checks.
All paths are in the vLLM 0.33.0 package.

* ``NixlBaseConnectorWorker._sync_block_size_with_kernel``
  (``distributed/kv_transfer/kv_connector/v1/nixl/base_worker.py``) and
  ``MooncakeConnectorWorker._sync_block_size_with_kernel``
  (``.../mooncake/mooncake_connector.py``): each connector votes one kernel block size
  over every transfer layer, the model runner per KV-cache group. The wrapper computes
  both with vLLM's own ``get_current_attn_backends_and_specs`` and
  ``select_common_block_size`` (per group: over that group's layers). Where they differ:
  ``enforce`` hands the connector the runner's value when every split transfer group has
  the same one (the connector module's ``select_common_block_size`` answers it for the
  call), and otherwise logs it; ``strict`` refuses to start
  (``ConnectorBlockSizeMismatch``); ``warn`` logs.
* ``NixlBaseConnectorWorker.add_remote_agent``: before vLLM registers a peer, kvconfig's
  mirror of vLLM's handshake checks (``kvconfig.mirror.connectors.nixl_handshake``) runs
  on this worker and the peer's ``NixlAgentMetadata``. A pair vLLM would fail (at the
  handshake or at the first transfer), or accept while this worker's pages differ from a
  group's and the pair transfers across block ratios or TP sizes, is refused with
  ``HandshakeRefused`` in ``enforce`` and ``strict``, logged in ``warn``.
* ``export_digest``: beside each plan the hooks export (``KVCONFIG_PLAN_EXPORT``), a
  ``*.digest.json`` with the plan, this process's connectors and the plan digest
  (``kvconfig.fleet.diff.digest``), which is also logged. Ranks, pipeline stages and
  data-parallel engines compare with ``kvconfig diff``.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import json
import os
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hooks._log import logger
from hooks._state import STATE
from kvconfig.errors import ConnectorBlockSizeMismatch, HandshakeRefused

NIXL = "vllm.distributed.kv_transfer.kv_connector.v1.nixl.base_worker"
MOONCAKE = "vllm.distributed.kv_transfer.kv_connector.v1.mooncake.mooncake_connector"
UTILS = "vllm.distributed.kv_transfer.kv_connector.utils"

MARK = "__kvconfig_original__"


@dataclass(frozen=True, slots=True)
class Target:
    """One patched method, and the parameters the wrapper passes on."""

    module: str
    owner: str
    attr: str
    params: tuple[str, ...]
    wrapper: str

    @property
    def name(self) -> str:
        return f"{self.module}.{self.owner}.{self.attr}"


TARGETS = (
    Target(NIXL, "NixlBaseConnectorWorker", "_sync_block_size_with_kernel", ("self",), "sync"),
    Target(
        NIXL,
        "NixlBaseConnectorWorker",
        "add_remote_agent",
        ("self", "nixl_agent_meta", "remote_tp_rank", "remote_tp_size", "remote_dcp_size"),
        "handshake",
    ),
    Target(MOONCAKE, "MooncakeConnectorWorker", "_sync_block_size_with_kernel", ("self",), "sync"),
)


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

_PATCHES: list[tuple[Any, str, Any, str]] = []


# ---------------------------------------------------------------- votes


def _vote_of(worker: Any, block_size: int) -> int:
    """The connector's own vote, as its ``_sync_block_size_with_kernel`` runs it."""
    utils = importlib.import_module(UTILS)
    from vllm.v1.worker.utils import select_common_block_size

    fallback = getattr(worker, "attn_backends", None) or utils.get_current_attn_backends(
        worker.vllm_config
    )
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
        logical = int(self.block_size)
        name = type(self).__name__
        try:
            own = _vote_of(self, logical)
            runner = runner_votes(self.vllm_config, self.kv_cache_config)
        except Exception:
            return original(self)  # vLLM's own vote raises; let it say so
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


# ---------------------------------------------------------------- the handshake


def _local_side(worker: Any) -> Any:
    from kvconfig.mirror.connectors import NixlSide

    topo = worker.transfer_topo
    return NixlSide(
        engine=str(worker.engine_id),
        block_size=int(worker.block_size),
        pages_per_block=int(worker._physical_blocks_per_logical_kv_block),
        tp=int(topo.tp_size),
        dcp=int(worker.dcp_size),
        pcp=int(worker.pcp_size),
        total_kv_heads=int(topo.total_num_kv_heads),
        use_mla=bool(worker.use_mla),
        has_mamba=bool(worker._has_mamba),
        hma=bool(worker._is_hma_required),
        prefix_caching=bool(worker.vllm_config.cache_config.enable_prefix_caching),
        use_host_buffer=bool(worker.use_host_buffer),
        kv_cache_layout=str(
            worker.host_buffer_kv_cache_layout if worker.use_host_buffer else worker.kv_cache_layout
        ),
        region_mapped=bool(getattr(worker, "_uses_region_group_mapping", False)),
        enable_permute_local_kv=bool(worker.kv_transfer_config.enable_permute_local_kv),
        transfer_mode=str(worker._TRANSFER_MODE),
        pp=int(worker.pp_size),
    )


def _remote_side(local: Any, meta: Any, tp: int, dcp: int) -> Any:
    import dataclasses

    groups = set(meta.region_group_ids or ())
    return dataclasses.replace(
        local,
        engine=str(meta.engine_id),
        block_size=int(meta.block_size),
        pages_per_block=int(meta.physical_blocks_per_logical_kv_block),
        tp=int(tp),
        dcp=int(dcp),
        pcp=int(getattr(meta, "pcp_size", 1)),
        kv_cache_layout=str(meta.kv_cache_layout),
        region_mapped=len(groups) > 1,
        use_host_buffer=False,
    )


def _plan(side: Any, backend: str) -> dict[str, Any]:
    return {
        "block_size": side.block_size * side.pages_per_block,
        "kernel_block_size": side.block_size,
        "pages_per_block": side.pages_per_block,
        "tp": side.tp,
        "dcp": side.dcp,
        "backend": backend,
        "layout": side.kv_cache_layout,
        "host_buffer": side.use_host_buffer,
    }


#: What each mirrored check means, in the refusal.
_CHECK_TEXT = {
    "block-size": "page sizes that are no multiple of each other",
    "tp-split": "different page sizes while the remote TP is larger",
    "host-buffer": "different page sizes with a host buffer",
    "region-mapped": "different page sizes for a region-mapped (hybrid) cache",
    "mamba-pages": "different pages per block for a Mamba hybrid with prefix caching",
    "layout": "different KV-cache layouts",
    "tp": "tensor-parallel sizes that do not divide",
    "dcp": "decode-context-parallel sizes that do not divide",
}


def _mismatched_pages(worker: Any, ratio: int, local_tp: int, remote_tp: int) -> str:
    """A group whose runner pages differ from this worker's, when the pair transfers
    across block ratios or TP sizes (re-laid pages): empty when none."""
    if ratio == 1 and local_tp == remote_tp:
        return ""
    record = worker.__dict__.get("_kvconfig_record")
    if not isinstance(record, Record):
        return ""
    bad = {g: k for g, k in record.runner.items() if k != record.used}
    if not bad:
        return ""
    g, k = next(iter(bad.items()))
    return f"group {g} is read in {k}-token pages, the connector transfers {record.used}"


def wrap_handshake(original: Callable[..., Any], module: Any) -> Callable[..., Any]:
    """``add_remote_agent``: refuse a pair whose block-size plans disagree."""

    @functools.wraps(original)
    def add_remote_agent(
        self: Any,
        nixl_agent_meta: Any,
        remote_tp_rank: int = 0,
        remote_tp_size: int = 1,
        remote_dcp_size: int = 1,
    ) -> Any:
        mode = STATE.mode
        if mode != "off" and getattr(self, "transfer_topo", None) is not None:
            from kvconfig.mirror.connectors import nixl_handshake

            local = _local_side(self)
            remote = _remote_side(local, nixl_agent_meta, remote_tp_size, remote_dcp_size)
            out = nixl_handshake(local, remote)
            check, error, consequence = out.check, "", ""
            if out.refusal is not None:
                error = str(out.refusal)
                if out.check == "region-mapped":
                    consequence = "the handshake passes and the first transfer raises"
            elif (pages := _mismatched_pages(self, out.ratio, local.tp, remote.tp)) != "":
                check = "connector pages"
                consequence = (
                    f"silently wrong KV after every transfer ({pages}; the receive side "
                    "re-lays pages that group does not have)"
                )
            if error or consequence:
                err = HandshakeRefused(
                    local_engine=local.engine,
                    remote_engine=remote.engine,
                    local_plan=_plan(local, str(self.backend_name)),
                    remote_plan=_plan(remote, str(nixl_agent_meta.attn_backend_name)),
                    check=_CHECK_TEXT.get(check, check),
                    vllm_error=error,
                    consequence=consequence,
                    fixes=_fixes(check, local, remote),
                    mode=mode,
                )
                if mode in ("enforce", "strict"):
                    raise err
                logger.error("%s", err)
        return original(self, nixl_agent_meta, remote_tp_rank, remote_tp_size, remote_dcp_size)

    return add_remote_agent


def _fixes(check: str, local: Any, remote: Any) -> list[str]:
    if check == "layout":
        return ["the same VLLM_KV_CACHE_LAYOUT on both engines (or none)"]
    if check in ("tp", "dcp"):
        return ["tensor- and context-parallel sizes that divide each other"]
    if check == "mamba-pages":
        return ["the same attention backend on both engines", "--disable-prefix-caching"]
    small = min(local.block_size, remote.block_size)
    fixes = [
        f"--block-size {small} on both engines (run 'kvconfig lint --fleet' for the sizes "
        "both accept)",
        "the same --attention-backend on both engines",
    ]
    if check == "tp-split":
        fixes.append("equal tensor parallelism")
    if check == "host-buffer":
        fixes.append("kv_buffer_device: cuda")
    return fixes


# ---------------------------------------------------------------- install


FACTORIES: dict[str, Callable[[Callable[..., Any], Any], Callable[..., Any]]] = {
    "sync": wrap_sync,
    "handshake": wrap_handshake,
}


def verify() -> list[str]:
    """Why the connector hooks cannot be installed (empty: they can)."""
    problems = []
    for t in TARGETS:
        try:
            mod = importlib.import_module(t.module)
        except Exception as err:
            problems.append(f"cannot import {t.module} ({type(err).__name__}: {err})")
            continue
        owner = getattr(mod, t.owner, None)
        func = getattr(owner, "__dict__", {}).get(t.attr) if isinstance(owner, type) else None
        if func is None:
            problems.append(f"{t.name} is missing")
            continue
        func = getattr(func, MARK, func)
        found = list(inspect.signature(func).parameters)
        if found[: len(t.params)] != list(t.params):
            problems.append(f"{t.name} takes ({', '.join(found)}), expected {t.params}")
        code = getattr(func, "__code__", None)
        if t.wrapper == "sync" and (
            code is None or "select_common_block_size" not in code.co_names
        ):
            problems.append(f"{t.name} no longer calls select_common_block_size")
        if t.wrapper == "sync" and not hasattr(mod, "select_common_block_size"):
            problems.append(f"{t.module} no longer imports select_common_block_size")
    try:
        utils = importlib.import_module(UTILS)
        if not hasattr(utils, "get_current_attn_backends_and_specs"):
            problems.append(f"{UTILS}.get_current_attn_backends_and_specs is missing")
    except Exception as err:
        problems.append(f"cannot import {UTILS} ({type(err).__name__}: {err})")
    return problems


def install() -> list[str]:
    """Patch the connectors (all or none); returns what is patched."""
    if _PATCHES:
        return [p[3] for p in _PATCHES]
    problems = verify()
    if problems:
        logger.warning(
            "kvconfig: the KV-connector checks are NOT installed (%s); the other hooks are",
            "; ".join(problems),
        )
        return []
    done: list[tuple[Any, str, Any, str]] = []
    try:
        for t in TARGETS:
            mod = importlib.import_module(t.module)
            owner = getattr(mod, t.owner)
            current = owner.__dict__[t.attr]
            original = getattr(current, MARK, current)
            wrapper = FACTORIES[t.wrapper](original, mod)
            setattr(wrapper, MARK, original)
            setattr(owner, t.attr, wrapper)
            done.append((owner, t.attr, original, t.name))
    except Exception as err:
        for owner, attr, original, _ in reversed(done):
            setattr(owner, attr, original)
        logger.warning(
            "kvconfig: patching the KV connectors failed and was rolled back (%s: %s)",
            type(err).__name__,
            err,
        )
        return []
    _PATCHES.extend(done)
    return [p[3] for p in done]


def uninstall() -> None:
    """Restore the connectors' own methods."""
    for owner, attr, original, _ in reversed(_PATCHES):
        setattr(owner, attr, original)
    _PATCHES.clear()


def patched() -> list[str]:
    """The connector methods patched in this process."""
    return [p[3] for p in _PATCHES]


# ---------------------------------------------------------------- the digest


def _ranks() -> dict[str, int]:
    out = {"rank": 0, "pipeline_stage": 0, "tensor_rank": 0, "data_parallel_rank": 0}
    with contextlib.suppress(Exception):
        from vllm.distributed import parallel_state as ps

        out["rank"] = int(ps.get_world_group().rank)
        out["pipeline_stage"] = int(ps.get_pp_group().rank_in_group)
        out["tensor_rank"] = int(ps.get_tp_group().rank_in_group)
    with contextlib.suppress(Exception):
        from vllm.config import get_current_vllm_config

        out["data_parallel_rank"] = int(
            get_current_vllm_config().parallel_config.data_parallel_rank
        )
    return out


def export_digest(path: str, plan: dict[str, Any]) -> str:
    """Write ``<plan>.digest.json`` beside an exported plan and log the digest."""
    from kvconfig.fleet.diff import digest
    from kvconfig.report.export import atomic_write

    ranks = _ranks()
    doc: dict[str, Any] = {
        "kvconfig_digest": 1,
        **ranks,
        "plan": plan,
        "connectors": [
            {
                "name": r.connector,
                "kernel_block_size": r.used,
                "pages_per_block": r.logical // r.used if r.used else None,
                "logical_block_size": r.logical,
                "own_vote": r.own,
            }
            for r in RECORDS
        ],
    }
    doc["digest"] = digest(doc)
    target = path[: -len(".json")] if path.endswith(".json") else path
    out = f"{target}.digest.json"
    try:
        atomic_write(Path(out), json.dumps(doc, indent=2) + "\n")
    except OSError as err:
        logger.error("kvconfig: cannot write the plan digest to %s: %s", out, err)
    logger.info(
        "kvconfig: plan digest %s (rank %d, pipeline stage %d, tensor rank %d, data-parallel "
        "rank %d)%s",
        doc["digest"],
        ranks["rank"],
        ranks["pipeline_stage"],
        ranks["tensor_rank"],
        ranks["data_parallel_rank"],
        f", written to {out}" if os.path.exists(out) else "",
    )
    return str(doc["digest"])
