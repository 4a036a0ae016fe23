"""What vLLM's start-up decided, read off the objects it built, as plain JSON facts.

Everything here is read, never recomputed: the KV-cache config the model runner holds
(``runner.kv_cache_config``: groups, specs, tensors), the runner's kernel block sizes
(``kernel_block_sizes`` in Model Runner V2, ``_kernel_block_sizes`` in V1), the
runner's attention groups and the speculator's (V2 ``speculator.attn_groups``) or the
V1 drafter's (``drafter.draft_attn_groups``), and the block size the engine core
reports (``cache_config.effective_attention_block_size``). Backends' declared sizes
are what ``get_supported_kernel_block_sizes`` returns for each attention group's own
layer spec, under the engine's config, as the vote saw them.

Runs in the engine child (imports vLLM).
"""

from __future__ import annotations

from typing import Any

from kvconfig.mirror.dispatch import held_kernel_block_size


def _size(value: Any) -> int | dict[str, int]:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return {"multiple_of": int(value.base)}


def _draft_layers(runner: Any, vllm_config: Any) -> set[str]:
    speculator = getattr(runner, "speculator", None)
    names = getattr(speculator, "draft_attn_layer_names", None)
    if names is None:
        drafter = getattr(runner, "drafter", None)
        names = getattr(drafter, "_draft_attn_layer_names", None)
    found = set(names or ())
    context = vllm_config.compilation_config.static_forward_context
    found.update(n for n, layer in context.items() if getattr(layer, "is_draft_layer", False))
    return found


def _runner_sizes(runner: Any) -> list[int] | None:
    sizes = getattr(runner, "kernel_block_sizes", None)
    if sizes is None:
        sizes = getattr(runner, "_kernel_block_sizes", None)
    return None if sizes is None else [int(k) for k in sizes]


def _attention_groups(groups: Any) -> list[Any]:
    out: list[Any] = []
    for g in groups or ():
        if isinstance(g, list | tuple):
            out.extend(g)
        else:
            out.append(g)
    return out


def _speculator_groups(runner: Any) -> list[Any] | None:
    speculator = getattr(runner, "speculator", None)
    if speculator is not None and hasattr(speculator, "attn_groups"):
        return _attention_groups(speculator.attn_groups)
    drafter = getattr(runner, "drafter", None)
    if drafter is not None and hasattr(drafter, "draft_attn_groups"):
        return _attention_groups(drafter.draft_attn_groups)
    return None


def _speculator_own(runner: Any, kv_cache_config: Any) -> list[int] | None:
    """What the Model Runner V2 speculator votes over its draft layers alone: vLLM's
    ``prepare_kernel_block_sizes`` over its attention groups (None: no common size)."""
    from vllm.v1.worker.utils import prepare_kernel_block_sizes

    speculator = getattr(runner, "speculator", None)
    groups = getattr(speculator, "attn_groups", None)
    if groups is None:
        return None
    try:
        return [int(k) for k in prepare_kernel_block_sizes(kv_cache_config, groups)]
    except ValueError:
        return None


def _declared(group: Any) -> list[int | dict[str, int]] | None:
    """The sizes the group's backend declares as the release's vote asks: with the
    layer's spec where ``select_common_block_size`` takes the specs, without one in the
    older releases (whose oldest backends take no argument)."""
    import inspect

    from vllm.v1.worker.utils import select_common_block_size

    backend = group.backend
    try:
        if "kv_cache_specs" in inspect.signature(select_common_block_size).parameters:
            return [_size(s) for s in backend.get_supported_kernel_block_sizes(group.kv_cache_spec)]
        return [_size(s) for s in backend.get_supported_kernel_block_sizes()]
    except Exception:
        return None


def _packed(kv_cache_config: Any, layers: set[str]) -> bool:
    return any(
        layers.intersection(t.layers) and t.block_stride > t.layer_stride
        for t in kv_cache_config.kv_cache_tensors
    )


def read(runner: Any, vllm_config: Any) -> dict[str, Any]:
    """The plan facts of a runner whose KV cache was initialised (or was being)."""
    from vllm.config import set_current_vllm_config
    from vllm.v1.kv_cache_interface import get_kv_cache_spec_kind

    kv = getattr(runner, "kv_cache_config", None)
    if kv is None:
        return {"groups": []}
    drafts = _draft_layers(runner, vllm_config)
    sizes = _runner_sizes(runner)
    runner_groups = _attention_groups(getattr(runner, "attn_groups", None))
    spec_groups = _speculator_groups(runner)
    own = _speculator_own(runner, kv) if spec_groups is not None else None
    groups = []
    with set_current_vllm_config(vllm_config):
        for gid, g in enumerate(kv.kv_cache_groups):
            spec = g.kv_cache_spec
            block = int(spec.block_size)
            layers = list(dict.fromkeys(g.layer_names))
            backends = []
            for ag in runner_groups:
                if ag.kv_cache_group_id != gid:
                    continue
                names = list(ag.layer_names)
                roles = {"draft" if n in drafts else "target" for n in names}
                backends.append(
                    {
                        "name": ag.backend.get_name(),
                        "class": f"{ag.backend.__module__}.{ag.backend.__qualname__}",
                        "sizes": _declared(ag),
                        "role": roles.pop() if len(roles) == 1 else "mixed",
                        "layers": names,
                        "kernel_block_size": held_kernel_block_size(ag),
                    }
                )
            speculator = None
            if spec_groups is not None:
                mine = [
                    ag
                    for ag in spec_groups
                    if ag.kv_cache_group_id == gid and drafts.intersection(ag.layer_names)
                ]
                values = {
                    held_kernel_block_size(ag) or int(ag.kv_cache_spec.block_size) for ag in mine
                }
                if values:
                    speculator = sorted(values)
            groups.append(
                {
                    "id": gid,
                    "spec": type(spec).__name__,
                    "kind": get_kv_cache_spec_kind(spec).value,
                    "block_size": block,
                    "packed": _packed(kv, set(layers)),
                    "layers": {
                        "target": [n for n in layers if n not in drafts],
                        "draft": [n for n in layers if n in drafts],
                    },
                    "backends": backends,
                    "runner": sizes[gid] if sizes is not None and gid < len(sizes) else None,
                    "speculator": speculator,
                    "speculator_own": own[gid] if own is not None and gid < len(own) else None,
                }
            )
    cache = vllm_config.cache_config
    return {
        "groups": groups,
        "kernel_block_sizes": sizes,
        "effective_attention_block_size": getattr(cache, "effective_attention_block_size", None),
        "kv_cache_layout": getattr(kv, "kv_cache_layout", None),
        "num_blocks": int(kv.num_blocks),
    }
