"""The KV-cache layout, and the NIXL and Mooncake connectors' own votes and handshake facts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kvconfig.errors import (
    ConnectorBlockSizeMismatch,
    ConnectorRefusal,
    NoCommonKernelBlockSize,
)
from kvconfig.fleet.components.facts import MooncakeFacts, NixlFacts
from kvconfig.fleet.components.groups import (
    DEFAULT_LAYOUT,
    DTYPE_BYTES,
    LAYOUT_ALIASES,
    MLA_KINDS,
    Group,
    _first_backend,
    _model_facts,
    cache_block_size,
    connector_voters,
    entries,
)
from kvconfig.fleet.model import Engine
from kvconfig.load import jsontext
from kvconfig.mirror import speculative, versions
from kvconfig.mirror.connectors.nixl import (
    compatibility_factors,
    compatibility_hash,
    region_groups,
)
from kvconfig.mirror.connectors.registry import (
    NIXL_CONNECTORS,
    multi_connector_layout,
    required_kv_cache_layout,
)
from kvconfig.mirror.connectors.sync import connector_error, sync_block_size, transfer_block_size
from kvconfig.mirror.model_config import total_num_kv_heads
from kvconfig.mirror.platform import kv_quant
from kvconfig.mirror.vote import Declared


def _layout(engine: Engine, kv: Mapping[str, Any] | None) -> tuple[str, ConnectorRefusal | None]:
    """The KV-cache layout the engine runs with, and the MultiConnector refusal if any."""
    env = engine.env.get("VLLM_KV_CACHE_LAYOUT")
    use_mla = target_mla(engine)
    required: str | None = None
    refusal: ConnectorRefusal | None = None
    if kv is not None:
        children = entries(kv)
        layouts = [
            required_kv_cache_layout(str(c.get("kv_connector")), use_mla=use_mla, hisparse=False)
            for c in children
        ]
        if kv.get("kv_connector") == "MultiConnector":
            try:
                required = multi_connector_layout(layouts)
            except ConnectorRefusal as err:
                refusal = err
        else:
            required = layouts[0] if layouts else None
    if env:
        return LAYOUT_ALIASES.get(env, env), refusal
    return required or DEFAULT_LAYOUT, refusal


def _speculative_factors(engine: Engine) -> dict[str, Any] | None:
    """``_get_speculative_compatibility_factors`` (``nixl/metadata.py``), which hashes the
    method ``SpeculativeConfig`` settled on: every ``*_mtp`` alias is ``mtp`` by then
    (``config/speculative.py``)."""
    dep = engine.deployment
    release = dep.vllm_version if dep.vllm_version in versions.KNOWN else versions.DEFAULT
    method = speculative.canonical(dep.speculative_method, versions.facts(release).mtp_methods)
    if method not in speculative.HIDDEN_STATE_METHODS:
        return None
    spec = engine.options.get("speculative-config")
    if isinstance(spec, str):
        import json

        try:
            spec = jsontext.loads(spec)
        except ValueError:
            spec = {}
    spec = spec if isinstance(spec, Mapping) else {}
    model = spec.get("model") or engine.options.get("model")
    aux = None
    if isinstance(model, str):
        import json
        from pathlib import Path

        path = Path(model) if Path(model).is_absolute() else engine.loaded.base / model
        try:
            draft = json.loads((path / "config.json").read_text(encoding="utf-8"))
            ids = draft.get("eagle_aux_hidden_state_layer_ids")
            aux = list(ids) if isinstance(ids, list) else None
        except (OSError, ValueError, AttributeError):
            aux = None
    return {
        "method": method,
        "model": model,
        "revision": spec.get("revision"),
        "code_revision": spec.get("code_revision"),
        "parallel_drafting": bool(spec.get("parallel_drafting", False)),
        "kv_cache_dtype": str(spec.get("kv_cache_dtype") or engine.deployment.kv_cache_dtype),
        "auxiliary_layer_ids": aux,
    }


def _hashed_kv_heads(engine: Engine, heads: int, use_mla: bool) -> int:
    """``get_total_num_kv_heads()`` as NIXL hashes it: an MLA model's config value (the
    derived layers cache one latent head), the target layers' heads otherwise."""
    if not use_mla:
        return heads
    total = total_num_kv_heads(engine.loaded.model_config)
    return total if total is not None else heads


def _vote(block: int, voters: Sequence[Declared]) -> tuple[int | None, ConnectorRefusal | None]:
    try:
        return sync_block_size(block, voters).kernel, None
    except NoCommonKernelBlockSize as err:
        return None, connector_error(err)


def _hooked(
    own: int | None, groups: Sequence[Group], hooks: str, component: str
) -> tuple[int | None, ConnectorRefusal | None]:
    """The connector's kernel block size under the kvconfig hooks, and their refusal
    (``hooks/_connectors/sync.py``): against the runner's k of each split transfer group
    (state and packed groups left out), ``enforce`` hands the connector the runner's k
    when every such group shares one; ``strict`` refuses to start when any differs."""
    if own is None or hooks not in ("enforce", "strict"):
        return own, None
    runner = {
        g.id: g.runner for g in groups if not g.state and not g.packed and g.runner is not None
    }
    differ = {gid: k for gid, k in runner.items() if k != own}
    if not differ:
        return own, None
    values = set(runner.values())
    if hooks == "enforce":
        return (values.pop() if len(values) == 1 else own), None
    gid, k = next(iter(differ.items()))
    group = next(g for g in groups if g.id == gid)
    err = ConnectorBlockSizeMismatch(
        group=gid,
        layers=group.layers,
        backends=[],
        block_size=group.block_size,
        expected=k,
        found=own,
        component=component,
        mode=hooks,
    )
    return own, ConnectorRefusal(type(err).__name__, str(err))


def _nixl(engine: Engine, entry: Mapping[str, Any], groups: list[Group], layout: str) -> NixlFacts:
    name = str(entry.get("kv_connector"))
    mode = NIXL_CONNECTORS[name]
    dep = engine.deployment
    extra = entry.get("kv_connector_extra_config") or {}
    hma = not dep.disable_hybrid_kv_cache_manager and any(
        g.kind != "full_attention" for g in groups
    )
    has_mamba = any(g.state for g in groups)
    use_mla = target_mla(engine)
    logical = transfer_block_size(
        [(g.block_size, g.state) for g in groups], cache_block_size(engine, groups)
    )
    heads, head_size, dtype, n_layers = _model_facts(engine)
    role = entry.get("kv_role")
    refusal: ConnectorRefusal | None = None
    if engine.pcp > 1 and role in ("kv_consumer", "kv_both"):
        refusal = ConnectorRefusal(
            "NotImplementedError",
            "NixlConnector PCP currently supports kv_producer only. Consumers and kv_both "
            "require prefill_context_parallel_size=1.",
        )
    elif has_mamba and engine.env.get("VLLM_SSM_CONV_STATE_LAYOUT") != "DS":
        refusal = ConnectorRefusal(
            "AssertionError",
            "3-read Mamba conv transfer requires DS conv state layout. Set "
            "VLLM_SSM_CONV_STATE_LAYOUT=DS",
        )
    elif engine.pp > 1 and hma and mode == "pull":
        refusal = ConnectorRefusal(
            "NotImplementedError",
            "NixlConnector (pull) does not support pipeline_parallel_size > 1 with hybrid KV "
            "cache layouts (HMA); use NixlPushConnector for PP + HMA.",
        )
    elif engine.pp > 1 and has_mamba:
        refusal = ConnectorRefusal(
            "NotImplementedError",
            "NixlPushConnector does not support pipeline_parallel_size > 1 with Mamba/SSM "
            "hybrid KV cache layouts yet.",
        )
    elif engine.pp > 1 and role == "kv_consumer":
        refusal = ConnectorRefusal(
            "NotImplementedError",
            "NixlPushConnector consumer (decode) does not support pipeline_parallel_size > 1.",
        )
    own, vote_refusal = _vote(logical, connector_voters(engine, groups))
    worker = "NixlPushConnectorWorker" if mode == "push" else "NixlPullConnectorWorker"
    kernel, hooks_refusal = _hooked(own, groups, dep.hooks, worker)
    refusal = refusal or vote_refusal or hooks_refusal
    backend = _first_backend(groups)
    factors = compatibility_factors(
        vllm_version=engine.release or dep.vllm_version,
        model=str(engine.options.get("model", dep.source)),
        dtype=f"torch.{dtype}",
        num_kv_heads=_hashed_kv_heads(engine, heads, use_mla),
        head_size=head_size,
        num_hidden_layers=n_layers,
        attn_backend_name=backend,
        cache_dtype=str(dep.kv_cache_dtype),
        is_hma_enabled=not dep.disable_hybrid_kv_cache_manager,
        speculative=_speculative_factors(engine),
        transfer_mode=mode,
    )
    return NixlFacts(
        name=name,
        role=role,
        transfer_mode=mode,
        logical=logical,
        kernel=kernel,
        pages=logical // kernel if kernel else 1,
        own=own,
        backend_name=backend,
        layout=layout,
        hma=hma,
        has_mamba=has_mamba,
        use_mla=use_mla,
        use_host_buffer=str(entry.get("kv_buffer_device", "cuda")) == "cpu",
        permute=bool(entry.get("enable_permute_local_kv", False)),
        total_kv_heads=heads,
        region_mapped=hma and len(groups) > 1,
        factors=factors,
        compat_hash=compatibility_hash(factors),
        enforce_hash=bool(extra.get("enforce_handshake_compat", True)),
        refusal=refusal,
        region_groups=region_groups(groups),
        draft_kv_heads=_draft_kv_heads(engine) if use_mla and not has_mamba else None,
        nvfp4=kv_quant(str(dep.kv_cache_dtype)) == "nvfp4",
    )


def target_mla(engine: Engine) -> bool:
    """``model_config.use_mla``: the target model's attention is MLA (a group's kind does
    not say it: an MLA target and a GQA draft share a ``full_attention`` group)."""
    return any(s.kind in MLA_KINDS for s in engine.deployment.layers if s.role == "target")


def _draft_kv_heads(engine: Engine) -> int | None:
    """A non-MLA draft's total KV heads under an MLA target: its layers' caches are split
    by heads while the target's are replicated (``_resolve_head_sharded_draft_kv_heads``,
    ``_get_head_sharded_draft_regions``)."""
    drafts = [s for s in engine.deployment.layers if s.role == "draft" and s.kind != "mamba"]
    if not drafts or any(s.kind in MLA_KINDS for s in drafts):
        return None
    return int(drafts[0].num_kv_heads)


def _mooncake(engine: Engine, entry: Mapping[str, Any], groups: list[Group]) -> MooncakeFacts:
    dep = engine.deployment
    logical = cache_block_size(engine, groups)
    own, refusal = _vote(logical, connector_voters(engine, groups))
    kernel, hooks_refusal = _hooked(own, groups, dep.hooks, "MooncakeConnectorWorker")
    refusal = refusal or hooks_refusal
    heads, head_size, dtype, _ = _model_facts(engine)
    use_mla = target_mla(engine)
    per_rank = max(1, heads // engine.tp)
    elem = 1 if str(dep.kv_cache_dtype).startswith("fp8") else DTYPE_BYTES.get(dtype, 2)
    return MooncakeFacts(
        name=str(entry.get("kv_connector")),
        role=entry.get("kv_role"),
        logical=logical,
        kernel=kernel,
        pages=logical // kernel if kernel else 1,
        own=own,
        kv_block_len=(kernel or logical) * per_rank * head_size * elem,
        total_kv_heads=None if use_mla or any(g.state for g in groups) else heads,
        replicated=use_mla or engine.tp > heads,
        refusal=refusal,
    )
