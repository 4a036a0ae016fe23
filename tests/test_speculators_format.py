"""Checkpoints in vLLM's speculators format, read by ``kvconfig.mirror.speculators`` and
by each installed vLLM release's own ``maybe_override_with_speculators`` and
``SpeculatorsConfig.extract_transformers_pre_trained_config`` on the same folders: the
verifier served, the speculative config run, the drafter's layer config and the errors
must agree. The configs are written here in the shape vllm-project/speculators writes
them (its ``Eagle3SpeculatorConfig``), not taken from kvconfig."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kvconfig.mirror import speculators, versions
from tests.releases import python_for

_LLAMA_LAYER = {
    "model_type": "llama",
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "num_hidden_layers": 1,
    "intermediate_size": 14336,
    "vocab_size": 128256,
    "rms_norm_eps": 1e-05,
    "max_position_embeddings": 131072,
}


def _speculator(kind: str, verifier: Any, tokens: int = 3, **extra: Any) -> dict[str, Any]:
    return {
        "architectures": [f"{kind.capitalize()}Speculator"],
        "speculators_model_type": kind,
        "speculators_version": "0.3.0",
        "speculators_config": {
            "algorithm": kind,
            "default_proposal_method": "greedy",
            "proposal_methods": [{"proposal_type": "greedy", "speculative_tokens": tokens}],
            "verifier": {"architectures": ["LlamaForCausalLM"], "name_or_path": verifier},
        },
        "transformer_layer_config": dict(_LLAMA_LAYER),
        "draft_vocab_size": 32000,
        **extra,
    }


CASES: dict[str, tuple[dict[str, Any], dict[str, Any] | None]] = {
    "eagle3 llama": (_speculator("eagle3", "meta-llama/Llama-3.1-8B-Instruct"), None),
    "eagle3 qwen3, the user's keys but method and model": (
        {
            **_speculator("eagle3", "Qwen/Qwen3-8B", 5, target_hidden_size=4096),
            "transformer_layer_config": {**_LLAMA_LAYER, "model_type": "qwen3"},
            "eagle_aux_hidden_state_layer_ids": [2, 18, 33],
            "norm_before_residual": False,
        },
        {"num_speculative_tokens": 2, "method": "ngram", "model": "elsewhere"},
    ),
    "peagle": (_speculator("peagle", "meta-llama/Llama-3.1-8B", mask_token_id=7), None),
    "dflash": (
        _speculator(
            "dflash",
            "Qwen/Qwen3-8B",
            7,
            aux_hidden_state_layer_ids=[1, 9, 17],
            mask_token_id=151669,
            sliding_window_non_causal=False,
        ),
        None,
    ),
    "dflash2": (
        _speculator(
            "dflash2",
            "Qwen/Qwen3-8B",
            7,
            aux_hidden_state_layer_ids=[1, 9],
            mask_token_id=3,
            conv_kernel_size=4,
            selector_rank=16,
        ),
        None,
    ),
    "dspark": (
        {
            **_speculator(
                "dspark",
                "Qwen/Qwen3-8B",
                6,
                aux_hidden_state_layer_ids=[2, 4],
                mask_token_id=5,
                markov_rank=8,
                block_size=7,
            ),
            "architectures": ["DSparkTrainingModel", "Qwen3OmniDSparkModel"],
        },
        None,
    ),
    "a verifier that is a folder here": (_speculator("eagle3", "local/verifier"), None),
    "a verifier that is no repository id": (_speculator("eagle3", "a--b/c"), None),
    "no transformer_layer_config": (
        {k: v for k, v in _speculator("eagle3", "x/y").items() if k != "transformer_layer_config"},
        None,
    ),
    "no proposal method": (
        {
            **_speculator("eagle3", "x/y"),
            "speculators_config": {"verifier": {"name_or_path": "x/y"}},
        },
        None,
    ),
    "an eagle3 of another model type": (
        {**_speculator("eagle3", "x/y"), "transformer_layer_config": {"model_type": "mistral"}},
        None,
    ),
    "an unknown algorithm": (_speculator("medusa", "x/y"), None),
    "peagle without its mask token": (_speculator("peagle", "x/y"), None),
    "a plain model": (dict(_LLAMA_LAYER, architectures=["LlamaForCausalLM"]), None),
}

_VLLM_SIDE = """
import json, sys
from vllm.transformers_utils.config import maybe_override_with_speculators
from vllm.transformers_utils.configs.speculators.base import SpeculatorsConfig
out = []
for case in json.loads(sys.stdin.read()):
    row = {}
    try:
        model, _tok, spec = maybe_override_with_speculators(
            model=case["folder"], tokenizer=None, trust_remote_code=False,
            vllm_speculative_config=case["given"])
        row["override"] = [model, spec]
    except Exception as e:
        row["override"] = ["error", type(e).__name__]
    try:
        row["layers"] = SpeculatorsConfig.extract_transformers_pre_trained_config(
            json.loads(json.dumps(case["config"])))
    except Exception as e:
        row["layers"] = ["error", type(e).__name__]
    out.append(row)
print("\\x01" + json.dumps(out))
"""


def _ours(folder: str, config: dict[str, Any], given: Any, version: str, here: Path) -> Any:
    try:
        found = speculators.override(
            folder, config, given, version, present=lambda p: os.path.lexists(here / p)
        )
    except ValueError as e:
        return ["error", type(e).__name__]
    return [folder, given] if found is None else list(found)


def _our_layers(config: dict[str, Any]) -> Any:
    try:
        return speculators.layer_config(json.loads(json.dumps(config)))
    except (ValueError, KeyError, TypeError) as e:
        return ["error", type(e).__name__]


@pytest.mark.parametrize("version", versions.KNOWN)
def test_speculators_checkpoints_read_as_each_release_reads_them(
    version: str, tmp_path: Path
) -> None:
    python = python_for(version)
    (tmp_path / "local" / "verifier").mkdir(parents=True)
    cases = []
    for k, (name, (config, given)) in enumerate(CASES.items()):
        folder = tmp_path / f"case{k}"
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps(config))
        cases.append({"name": name, "folder": str(folder), "config": config, "given": given})
    proc = subprocess.run(
        [python, "-c", _VLLM_SIDE],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "VLLM_CONFIGURE_LOGGING": "0"},
        timeout=300,
        check=True,
    )
    theirs = json.loads(proc.stdout.rsplit("\x01", 1)[1])
    for case, row in zip(cases, theirs, strict=True):
        where = f"vLLM {version}: {case['name']}"
        ours = _ours(case["folder"], case["config"], case["given"], version, tmp_path)
        assert ours == row["override"], where
        if speculators.is_drafter(case["config"]):
            assert _our_layers(case["config"]) == row["layers"], where
    errors = [
        c["name"] for c, row in zip(cases, theirs, strict=True) if row["override"][0] == "error"
    ]
    assert "no transformer_layer_config" in errors  # the comparison has both outcomes
    checked = versions.rules(version).speculators_verifier_checked
    assert ("a verifier that is a folder here" in errors) == checked


def test_serving_a_speculator_plans_its_verifier_with_the_checkpoint_as_drafter(
    tmp_path: Path,
) -> None:
    """``vllm serve SPECULATOR`` plans as ``vllm serve VERIFIER --speculative-config``
    naming the same drafter in Hugging Face's form: the same layers, EAGLE-3 from the
    checkpoint, its token count, and the user's extra keys kept."""
    from kvconfig import load_deployment

    root = Path(__file__).resolve().parents[1]
    qwen3 = str(root / "examples" / "models" / "qwen3-8b")
    eagle = json.loads((root / "examples/models/qwen3-8b-eagle3-angelslim/config.json").read_text())
    speculator = tmp_path / "speculator"
    speculator.mkdir()
    layer = {k: v for k, v in eagle.items() if k not in ("architectures", "draft_vocab_size")}
    config = _speculator("eagle3", "Qwen/Qwen3-8B", 4)
    config["transformer_layer_config"] = layer
    (speculator / "config.json").write_text(json.dumps(config))
    options = {"platform": "h100", "model_path": [f"Qwen/Qwen3-8B={qwen3}"]}
    served = load_deployment(
        ["vllm", "serve", str(speculator), "--speculative-config", '{"method": "ngram"}'],
        allow_path=[str(tmp_path)],
        **options,  # type: ignore[arg-type]
    )
    spec = json.dumps(
        {"method": "eagle3", "model": str(root / "examples/models/qwen3-8b-eagle3-angelslim"),
         "num_speculative_tokens": 4}
    )  # fmt: skip
    explicit = load_deployment(
        ["vllm", "serve", qwen3, "--speculative-config", spec],
        **options,  # type: ignore[arg-type]
    )
    assert served.speculative_method == explicit.speculative_method == "eagle3"
    assert served.num_speculative_tokens == explicit.num_speculative_tokens == 4
    drafts = [s for s in served.layers if s.role == "draft"]
    assert drafts and [(s.name, s.count) for s in drafts] == [
        (s.name, s.count) for s in explicit.layers if s.role == "draft"
    ]
    assert len(served.layers) == len(explicit.layers)
