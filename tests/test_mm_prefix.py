"""Multimodal prefix LMs: their attention needs a backend with ``supports_mm_prefix()``.

vLLM's ``Attention.__init__`` sets ``use_mm_prefix`` from ``ModelConfig.is_mm_prefix_lm``
(Gemma 3 and the other models of ``model_arch_config_convertor.py``), unless the
deployment serves no multimodal input; the selector then refuses a backend without it:
"Selected backend FLASHINFER is not valid for this configuration. Reason: ['partial
multimodal token full attention not supported']".
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from kvconfig.cli import main
from kvconfig.derive import layers as derive_layers
from kvconfig.load.models import read_model
from kvconfig.mirror.model_config import is_mm_prefix_lm, serves_multimodal

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
MODELS = EXAMPLES / "models"
GEMMA3 = "model: ./models/gemma-3-27b-it\nblock-size: 128\n"


def _plan(path: Path, platform: str = "h100") -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    code = main(["plan", "--platform", platform, "--format", "json", str(path)], stdout=out)
    doc: dict[str, Any] = json.loads(out.getvalue())
    return code, doc


def _serve(tmp_path: Path, text: str) -> Path:
    models = tmp_path / "models"
    if not models.exists():
        models.symlink_to(MODELS)
    path = tmp_path / "gemma.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_gemma3_flashinfer_example_is_refused_as_vllm_refuses_it() -> None:
    code, doc = _plan(EXAMPLES / "gemma-3-27b-h100-flashinfer-128.yaml")
    assert code == 1 and doc["verdict"] == "reject" and doc["groups"] == []
    codes = {f["code"] for f in doc["findings"]}
    assert codes == {"KV301"}
    assert all(
        "partial multimodal token full attention not supported" in f["message"]
        for f in doc["findings"]
    )


def test_served_text_only_flashinfer_is_valid() -> None:
    code, doc = _plan(EXAMPLES / "gemma-3-27b-h100-flashinfer-128-text.yaml")
    assert code == 0 and len(doc["groups"]) == 7
    assert {v["name"] for g in doc["groups"] for v in g["backends"]} == {"FLASHINFER"}


@pytest.mark.parametrize(
    ("extra", "verdict"),
    [
        ("limit-mm-per-prompt: '{\"image\": 0}'\n", "ok"),
        ("limit-mm-per-prompt:\n  image: {count: 0}\n", "ok"),
        ("limit-mm-per-prompt: '{\"image\": 1}'\n", "reject"),
        ("limit-mm-per-prompt: '{\"video\": 0}'\n", "reject"),
        ("limit-mm-per-prompt: '{\"image\": 0}'\nenable-mm-embeds: true\n", "reject"),
        ("language-model-only: true\n", "ok"),
    ],
)
def test_multimodal_input_decides(tmp_path: Path, extra: str, verdict: str) -> None:
    _, doc = _plan(_serve(tmp_path, GEMMA3 + "attention-backend: FLASHINFER\n" + extra))
    assert doc["verdict"] == verdict, doc["findings"]


@pytest.mark.parametrize(("platform", "backend"), [("h100", "TRITON_ATTN"), ("b200", "FLASH_ATTN")])
def test_the_automatic_choice_skips_backends_without_mm_prefix(
    tmp_path: Path, platform: str, backend: str
) -> None:
    # SM90: FLASH_ATTN needs FA4 for mm_prefix, FlashInfer has none; SM10x: FA4 resolves
    code, doc = _plan(_serve(tmp_path, GEMMA3), platform)
    assert code == 0
    assert {v["name"] for g in doc["groups"] for v in g["backends"]} == {backend}


def test_only_the_multimodal_prefix_lm_layers_get_it() -> None:
    gemma3 = derive_layers.derive(read_model(MODELS / "gemma-3-27b-it", "t", "model"), "bfloat16")
    assert gemma3 and all(s.get("mm_prefix") for s in gemma3)
    for name in ("gemma-2-9b-it", "qwen3-8b", "qwen3.5-9b", "minimax-m3-nvfp4"):
        sets = derive_layers.derive(read_model(MODELS / name, "t", "model"), "bfloat16")
        assert not any(s.get("mm_prefix") for s in sets), name


def test_the_rule_of_each_convertor() -> None:
    assert is_mm_prefix_lm({"model_type": "gemma3"})
    assert not is_mm_prefix_lm({"model_type": "gemma3_text"})
    assert is_mm_prefix_lm({"model_type": "qwen3", "is_mm_prefix_lm": True})
    assert is_mm_prefix_lm(
        {"model_type": "gemma4", "text_config": {"use_bidirectional_attention": "vision"}}
    )
    assert not is_mm_prefix_lm({"model_type": "gemma4"})
    assert is_mm_prefix_lm({"model_type": "deepseek_v4", "vision_n_layers": 2})
    assert serves_multimodal(("image",))
    assert not serves_multimodal(("image",), language_model_only=True)
    assert serves_multimodal(("image", "video"), limits={"image": 0})
    assert serves_multimodal(("image",), limits={"image": 0}, mm_embeds=True)


@pytest.mark.vllm
@pytest.mark.parametrize("name", sorted(p.name for p in MODELS.iterdir() if p.is_dir()))
def test_is_mm_prefix_lm_is_vllms(name: str) -> None:
    """Against the convertor vLLM's ``ModelConfig`` uses for the same ``config.json``."""
    import types

    pytest.importorskip("vllm")
    import vllm.config  # noqa: F401  (the convertors import the config package first)
    from vllm.transformers_utils.model_arch_config_convertor import (
        MODEL_ARCH_CONFIG_CONVERTORS,
        ModelArchConfigConvertorBase,
    )

    config = json.loads((MODELS / name / "config.json").read_text(encoding="utf-8"))

    def attrs(d: dict[str, Any]) -> Any:
        return types.SimpleNamespace(
            **{k: attrs(v) if isinstance(v, dict) else v for k, v in d.items()}
        )

    hf = attrs(config)
    cls = MODEL_ARCH_CONFIG_CONVERTORS.get(config.get("model_type"), ModelArchConfigConvertorBase)
    convertor = cls.__new__(cls)
    convertor.hf_config = hf
    convertor.hf_text_config = getattr(hf, "text_config", hf)
    assert is_mm_prefix_lm(config) == convertor.is_mm_prefix_lm(True)
