"""The bundled examples and what vLLM 0.33.0 does with each.

Every row pins the verdict (Model Runner V2, no hooks) and, per KV-cache group, its
kind, block size B and the runner's kernel block size k. ``test_layouts.py`` checks
kvconfig against these rows; ``test_fidelity_layouts.py`` checks the same rows against
vLLM's own start-up code (``vllm_harness``), so a row holds only if vLLM agrees.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
MODELS = EXAMPLES / "models"

Group = tuple[str, int, int]
"""(kind, B, runner k)."""


@dataclass(frozen=True)
class Case:
    """One example deployment on one platform."""

    file: str
    platform: str
    model: str
    verdict: str
    groups: list[Group]
    speculator: dict[int, int] = field(default_factory=dict)
    """The speculator's own k per draft group (MRV2, no hooks)."""
    adjusted: bool = False
    """vLLM changes B itself (finding KV501)."""

    @property
    def id(self) -> str:
        return f"{self.file.removesuffix('.yaml')}@{self.platform}"


def _full(b: int, k: int) -> Group:
    return ("full_attention", b, k)


CASES: list[Case] = [
    Case("qwen3-8b-eagle3-gh200-default.yaml", "gh200", "qwen3-8b", "ok", [_full(16, 16)], {0: 16}),
    Case(
        "qwen3-8b-eagle3-gh200-triton-64.yaml", "gh200", "qwen3-8b", "ok", [_full(64, 64)], {0: 64}
    ),
    Case(
        "qwen3-8b-eagle3-gh200-triton-128.yaml",
        "gh200",
        "qwen3-8b",
        "reject",
        [_full(128, 64)],
        {0: 128},
    ),
    Case(
        "qwen3-8b-eagle3-gh200-triton-256.yaml",
        "gh200",
        "qwen3-8b",
        "reject",
        [_full(256, 64)],
        {0: 256},
    ),
    Case(
        "minimax-m3-eagle3-gb300-128.yaml",
        "gb300",
        "minimax-m3-nvfp4",
        "ok",
        [_full(128, 128)],
        {0: 128},
    ),
    Case(
        "minimax-m3-eagle3-gb300-256.yaml",
        "gb300",
        "minimax-m3-nvfp4",
        "reject",
        [_full(256, 128)],
        {0: 256},
    ),
    Case(
        "minimax-m3-eagle3-gb300-512.yaml",
        "gb300",
        "minimax-m3-nvfp4",
        "reject",
        [_full(512, 128)],
        {0: 512},
    ),
    Case(
        "deepseek-v3-mtp-h200-fp8.yaml",
        "h200",
        "deepseek-v3",
        "ok",
        [("mla_attention", 64, 64)],
        {0: 64},
    ),
    Case(
        "deepseek-v32-mtp-h200-fp8.yaml",
        "h200",
        "deepseek-v3.2-exp",
        "ok",
        [("mla_attention", 64, 64)],
        {0: 64},
    ),
    Case(
        "kimi-k2-eagle3-b200-128.yaml",
        "b200",
        "kimi-k2-instruct",
        "reject",
        [_full(128, 64)],
        {0: 128},
    ),
    Case(
        "gpt-oss-120b-eagle3-h200-triton-128.yaml",
        "h200",
        "gpt-oss-120b",
        "ok",
        [("sliding_window", 128, 64)] * 18 + [_full(128, 64)] * 18 + [_full(128, 128)],
        {36: 128},
    ),
    # vLLM refuses FlashInfer for Gemma 3's multimodal prefix attention before it forms
    # any group (KV301); its text-only twin below plans.
    Case("gemma-3-27b-h100-flashinfer-128.yaml", "h100", "gemma-3-27b-it", "reject", []),
    Case(
        "gemma-3-27b-h100-flashinfer-128-text.yaml",
        "h100",
        "gemma-3-27b-it",
        "ok",
        [("sliding_window", 128, 64)] * 6 + [_full(128, 64)],
    ),
    Case(
        "qwen3-next-mtp-h200-flashinfer.yaml",
        "h200",
        "qwen3-next-80b-a3b-instruct",
        "ok",
        [("mamba", 576, 576)] * 3 + [_full(576, 64)],
        {3: 64},
        adjusted=True,
    ),
    Case(
        "nemotron-h-8b-h100.yaml",
        "h100",
        "nemotron-h-8b-base-8k",
        "ok",
        [("mamba", 1040, 1040)] * 6 + [_full(1040, 1040)],
        adjusted=True,
    ),
]
