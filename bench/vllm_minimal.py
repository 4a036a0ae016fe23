"""The least a user runs to get vLLM's own answer offline: import vLLM's worker utilities
and call ``prepare_kernel_block_sizes`` on the seed's KV-cache group (36 FLASHINFER target
layers and one TRITON_ATTN EAGLE3 draft layer, B=128, under an emulated SM90), once for
the runner (all layers) and once for the speculator (draft layers only).

Timed cold, as a fresh process, by bench/run.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools.catalog import emulate

emulate.install()

import torch  # noqa: E402
from vllm.v1.kv_cache_interface import (  # noqa: E402
    FullAttentionSpec,
    KVCacheConfig,
    KVCacheGroupSpec,
    KVCacheTensor,
    UniformTypeKVCacheSpecs,
)
from vllm.v1.worker.utils import (  # noqa: E402
    AttentionGroup,
    customize_attention_spec,
    prepare_kernel_block_sizes,
)

fi = emulate.load("vllm.v1.attention.backends.flashinfer.FlashInferBackend")
tr = emulate.load("vllm.v1.attention.backends.triton_attn.TritonAttentionBackend")
with emulate.emulated(emulate.Emulation(capability=(9, 0))):
    names = [f"model.layers.{i}.self_attn.attn" for i in range(37)]
    specs = {
        n: customize_attention_spec(
            fi if i < 36 else tr,
            FullAttentionSpec(block_size=128, num_kv_heads=8, head_size=128, dtype=torch.bfloat16),
        )
        for i, n in enumerate(names)
    }
    group = KVCacheGroupSpec(names, UniformTypeKVCacheSpecs.from_specs(specs))
    tensors = [
        KVCacheTensor(size=1 << 20, layers=[n], layer_stride=1 << 20, block_stride=1 << 12)
        for n in names
    ]
    config = KVCacheConfig(num_blocks=256, kv_cache_tensors=tensors, kv_cache_groups=[group])
    runner = [
        [
            AttentionGroup(fi, names[:36], specs[names[0]], 0),
            AttentionGroup(tr, names[36:], specs[names[36]], 0),
        ]
    ]
    print(
        prepare_kernel_block_sizes(config, runner),
        prepare_kernel_block_sizes(config, [runner[0][1:]]),
    )
