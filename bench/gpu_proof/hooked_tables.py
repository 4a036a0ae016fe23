"""CPU step: the block tables vLLM 0.33.0's own code builds for the draft layer, for every case.

Needs vLLM 0.33.0 installed (no GPU).  For each case of ``plan.py`` it builds vLLM's
``AttentionGroup`` for the EAGLE3 draft layer (backend ``TRITON_ATTN``, the draft layer's
``FullAttentionSpec``) the way ``init_attn_backend`` (``vllm/v1/worker/gpu/attn_utils.py``) does,
by ``AttentionGroup.create_metadata_builders(kernel_block_size=...)``, twice:

* ``speculator``: with the speculator's own vote over its draft layers (vLLM's
  ``select_common_block_size`` over ``TRITON_ATTN`` alone: 128).  This is what vLLM 0.33.0 does.
* ``hooked``: with the runner's vote over all layers of the group (``select_common_block_size``
  over ``FLASHINFER`` and ``TRITON_ATTN``: 64), which is the value the kvconfig hooks hand to
  ``DraftModelSpeculator.set_attn``.

Each group's ``map_to_kernel_block_table`` then maps the case's zero-padded manager table.  Only the
metadata builder is replaced (it allocates device buffers and needs a full ``VllmConfig``); the
group, the vote and the mapping are vLLM's.  The layout vLLM resolves for the group's backends
(``get_supported_kv_cache_layouts`` in ``vllm/v1/attention/backends/utils.py``) is recorded too.

Usage::

    python bench/gpu_proof/hooked_tables.py --out bench/gpu_proof/_carry/hooked_tables.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import types
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "_carry" / "hooked_tables.json"
PLANS = ((0, False), (1, False), (0, True))


def load_plan() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_proof_plan", HERE / "plan.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


plan = load_plan()


class NoDeviceBuilder:
    """Stands in for ``TritonAttentionMetadataBuilder``, which allocates device buffers."""

    requires_block_table_width = False
    supports_draft_decode_metadata_update = True

    def __init__(self, spec: Any, layer_names: list[str], config: Any, device: Any, **kw: Any):
        self.kv_cache_spec = spec


def draft_group(kernel_block_size: int, max_num_seqs: int, max_model_len: int) -> Any:
    """vLLM's AttentionGroup for the draft layer after ``create_metadata_builders``."""
    import torch
    from vllm.v1.attention.backends.triton_attn import TritonAttentionBackend
    from vllm.v1.kv_cache_interface import FullAttentionSpec
    from vllm.v1.worker.utils import AttentionGroup

    class DraftTritonBackend(TritonAttentionBackend):
        """TRITON_ATTN with the device-free builder; every other answer is vLLM's."""

        @staticmethod
        def get_builder_cls() -> Any:
            return NoDeviceBuilder

    spec = FullAttentionSpec(
        block_size=plan.BLOCK_SIZE,
        num_kv_heads=plan.NUM_KV_HEADS,
        head_size=plan.HEAD_DIM,
        dtype=torch.bfloat16,
        is_draft=True,
    )
    config = types.SimpleNamespace(
        model_config=types.SimpleNamespace(max_model_len=max_model_len),
        scheduler_config=types.SimpleNamespace(max_num_seqs=max_num_seqs),
        parallel_config=types.SimpleNamespace(decode_context_parallel_size=1),
    )
    group = AttentionGroup(DraftTritonBackend, [plan.DRAFT_LAYER], spec, 0)
    group.create_metadata_builders(
        vllm_config=config, device=torch.device("cpu"), kernel_block_size=kernel_block_size
    )
    return group


def votes() -> dict[str, Any]:
    """The runner's and the speculator's kernel block sizes, by vLLM's own vote."""
    import torch
    from vllm.v1.attention.backends.flashinfer import FlashInferBackend
    from vllm.v1.attention.backends.triton_attn import TritonAttentionBackend
    from vllm.v1.attention.backends.utils import get_supported_kv_cache_layouts
    from vllm.v1.kv_cache_interface import FullAttentionSpec
    from vllm.v1.worker.utils import select_common_block_size

    spec = FullAttentionSpec(
        block_size=plan.BLOCK_SIZE,
        num_kv_heads=plan.NUM_KV_HEADS,
        head_size=plan.HEAD_DIM,
        dtype=torch.bfloat16,
    )
    runner = select_common_block_size(
        plan.BLOCK_SIZE, [FlashInferBackend, TritonAttentionBackend], [spec, spec]
    )
    speculator = select_common_block_size(plan.BLOCK_SIZE, [TritonAttentionBackend], [spec])
    layouts = get_supported_kv_cache_layouts([FlashInferBackend, TritonAttentionBackend])
    return {
        "triton_attn": triton_launch_constants(),
        "runner_kernel_block_size": runner,
        "speculator_kernel_block_size": speculator,
        "layout": layouts[0].name,
        "layout_candidates": [layout.name for layout in layouts],
    }


def triton_launch_constants() -> dict[str, int]:
    """What ``TritonAttentionMetadataBuilder.__init__`` sizes its split-K (3D) scratch from."""
    from vllm.v1.attention.backends import triton_attn
    from vllm.v1.attention.ops import triton_unified_attention

    return {
        "MIN_LAUNCH_GRID_SIZE_2D": triton_attn.MIN_LAUNCH_GRID_SIZE_2D,
        "NUM_PAR_SOFTMAX_SEGMENTS": triton_attn.NUM_PAR_SOFTMAX_SEGMENTS,
        "MAX_3D_QUERY_LEN": triton_unified_attention.MAX_3D_QUERY_LEN,
    }


def tables_for(cases: list[Any], runner_k: int, speculator_k: int) -> dict[str, Any]:
    import torch

    max_seqs = max(c.batch for c in cases)
    max_len = max(max(c.lens) for c in cases)
    hooked = draft_group(runner_k, max_seqs, max_len)
    unhooked = draft_group(speculator_k, max_seqs, max_len)
    out: dict[str, Any] = {}
    for case in cases:
        manager = torch.tensor(case.padded_manager_rows(), dtype=torch.int32)
        c_table = hooked.map_to_kernel_block_table(manager)
        b_table = unhooked.map_to_kernel_block_table(manager)
        out[case.name] = {
            "fingerprint": case.fingerprint(),
            "speculator_table_is_manager_table": bool(torch.equal(b_table, manager)),
            "hooked": c_table.tolist(),
        }
    return {
        "hooked_group_kernel_block_size": hooked.kernel_block_size,
        "speculator_group_kernel_block_size": unhooked.kernel_block_size,
        "cases": out,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)

    import vllm

    found = votes()
    payload: dict[str, Any] = {
        "vllm": vllm.__version__,
        "source": "vllm/v1/worker/utils.py: AttentionGroup.create_metadata_builders, "
        "AttentionGroup.map_to_kernel_block_table, select_common_block_size",
        **found,
        "plans": {},
    }
    for seed, small in PLANS:
        cases = plan.build_plan(seed, small)
        payload["plans"][plan.plan_key(seed, small)] = tables_for(
            cases, found["runner_kernel_block_size"], found["speculator_kernel_block_size"]
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, separators=(",", ":")))
    n = sum(len(p["cases"]) for p in payload["plans"].values())
    print(
        f"vLLM {payload['vllm']}: runner k={found['runner_kernel_block_size']}, speculator "
        f"k={found['speculator_kernel_block_size']}, layout {found['layout']}; "
        f"{n} cases -> {args.out} ({args.out.stat().st_size / 1e6:.1f} MB)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
