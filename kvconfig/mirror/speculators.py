"""vLLM's speculators format: checkpoints of vllm-project/speculators, whose ``config.json``
holds a ``speculators_config`` (the method, its tokens, the verifier it drafts for) and
the drafter's own layers in ``transformer_layer_config``.

Mirrors ``vllm/transformers_utils/configs/speculators/`` (``SpeculatorsConfig`` and the
per-algorithm updaters of ``algos.py``) and ``maybe_override_with_speculators``
(``vllm/transformers_utils/config.py``), the same in every release kvconfig knows but where
noted:

* ``layer_config``: a drafter in the format is the config ``get_config`` makes of it (a
  ``config.json`` without ``model_type`` whose ``speculators_config`` is set is a
  ``SpeculatorsConfig``): its ``transformer_layer_config`` with the algorithm's fields
  and architecture;
* ``override``: ``vllm serve SPECULATOR`` serves the verifier the checkpoint names, the
  checkpoint its drafter (``EngineArgs.create_engine_config`` calls
  ``maybe_override_with_speculators`` before it makes the model config, for any model
  not on cloud storage). Newer releases leave a model that is one file alone and refuse a
  verifier that is no Hub repository id, or that is a path present on the machine
  (``kvconfig.mirror.versions.Rules.speculators_verifier_checked``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from kvconfig.mirror import versions

KINDS = ("eagle3", "peagle", "dflash", "dflash2", "dspark")
"""``SUPPORTED_SPECULATORS_TYPES`` (``algos.py``), in the order registered."""

_ARCHITECTURES = {
    "eagle3": {"qwen3": "Eagle3Qwen3ForCausalLM", "llama": "Eagle3LlamaForCausalLM"},
    "peagle": {"qwen3": "PeagleQwen3ForCausalLM", "llama": "PeagleLlamaForCausalLM"},
}
_DSPARK_ARCHITECTURES = ("Qwen3DSparkModel", "Qwen3OmniDSparkModel")
_DSPARK_KEYS = (
    "draft_vocab_size",
    "target_hidden_size",
    "mask_token_id",
    "markov_rank",
    "markov_head_type",
    "block_size",
    "enable_confidence_head",
    "confidence_head_with_markov",
    "use_aux_hidden_state",
)
_CLOUD = ("s3://", "gs://", "az://", "abfs://", "abfss://")
"""``is_cloud_storage`` (``vllm/transformers_utils/utils.py``): no speculators check."""


def is_drafter(config: Mapping[str, Any]) -> bool:
    """``get_config``'s test: no ``model_type``, a ``speculators_config``."""
    return config.get("model_type") is None and config.get("speculators_config") is not None


def layer_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """``SpeculatorsConfig.extract_transformers_pre_trained_config``: the drafter's layer
    config as vLLM builds it. Raises ValueError, KeyError or TypeError where vLLM does."""
    kind = config.get("speculators_model_type")
    if kind not in KINDS:
        raise ValueError(
            f"speculators_model_type {kind!r} is none of {', '.join(KINDS)} (vLLM: 'Please "
            "ensure you're loading a speculators-format model')"
        )
    layers = config.get("transformer_layer_config", {})
    if not isinstance(layers, Mapping):
        raise TypeError("transformer_layer_config: expected a mapping")
    out = dict(layers)
    if kind in ("eagle3", "peagle"):
        out["draft_vocab_size"] = config.get("draft_vocab_size")
        if config.get("target_hidden_size") is not None:
            out["target_hidden_size"] = config["target_hidden_size"]
        out["norm_before_residual"] = config.get("norm_before_residual", kind == "eagle3")
        out["norm_before_fc"] = config.get("norm_before_fc", False)
        if kind == "eagle3":
            out["fc_norm"] = config.get("fc_norm", False)
            out["norm_output"] = config.get("norm_output", False)
        model_type = out.get("model_type", "llama")
        if model_type not in _ARCHITECTURES[kind]:
            raise ValueError(f"unsupported model_type {model_type!r} for a {kind} speculator")
        out["architectures"] = [_ARCHITECTURES[kind][model_type]]
        if kind == "peagle":
            out["pard_token"] = config["mask_token_id"]
        if config.get("eagle_aux_hidden_state_layer_ids"):
            out["eagle_aux_hidden_state_layer_ids"] = config["eagle_aux_hidden_state_layer_ids"]
    elif kind in ("dflash", "dflash2"):
        out["architectures"] = ["DFlashDraftModel"]
        out["draft_vocab_size"] = config.get("draft_vocab_size")
        if config.get("target_hidden_size") is not None:
            out["target_hidden_size"] = config["target_hidden_size"]
        aux = config["aux_hidden_state_layer_ids"]
        out["eagle_aux_hidden_state_layer_ids"] = aux
        out["dflash_config"] = {
            "mask_token_id": config["mask_token_id"],
            "target_layer_ids": [i - 1 for i in aux],
            "sample_from_anchor": config.get("sample_from_anchor", False),
            "causal": not config.get("sliding_window_non_causal", True),
        }
        if kind == "dflash2":
            out["architectures"] = ["DFlash2DraftModel"]
            for key in ("conv_kernel_size", "conv_group_size", "selector_rank", "selector_top_k"):
                if config.get(key) is not None:
                    out["dflash_config"][key] = config[key]
    else:  # dspark
        named = config.get("architectures") or []
        chosen = [a for a in named if a in _DSPARK_ARCHITECTURES]
        out["architectures"] = chosen or ["Qwen3DSparkModel"]
        anchor = config.get("sample_from_anchor", False)
        out["sample_from_anchor"] = anchor
        out["dspark_bonus_anchor"] = not anchor
        aux = config["aux_hidden_state_layer_ids"]
        out["eagle_aux_hidden_state_layer_ids"] = aux
        out["target_layer_ids"] = [i - 1 for i in aux]
        for key in _DSPARK_KEYS:
            if config.get(key) is not None:
                out[key] = config[key]
    return out


def speculative_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """``SpeculatorsConfig.extract_vllm_speculative_config``: the method and its tokens
    (``peagle`` is ``eagle3`` with parallel drafting, ``dflash2`` is ``dflash``). Raises
    ValueError where vLLM does."""
    try:
        spec = config["speculators_config"]
        first = spec["proposal_methods"][0]
        _ = first["speculative_tokens"]
        _ = spec["verifier"]["name_or_path"]
        _ = config["speculators_model_type"]
    except (KeyError, IndexError, TypeError) as e:
        raise ValueError("invalid speculators config structure") from e
    if "transformer_layer_config" not in config:
        raise ValueError("a speculators config must give transformer_layer_config")
    if not isinstance(config["transformer_layer_config"], dict):
        raise ValueError("transformer_layer_config must be a mapping")
    methods = spec.get("proposal_methods")
    if not methods:
        raise ValueError("no proposal methods found in the speculators config")
    tokens = methods[0].get("speculative_tokens")
    if tokens is None:
        raise ValueError("missing speculative_tokens in the first proposal method")
    out: dict[str, Any] = {
        "method": config.get("speculators_model_type"),
        "num_speculative_tokens": tokens,
    }
    if out["method"] == "peagle":
        out.update({"method": "eagle3", "parallel_drafting": True})
    elif out["method"] == "dflash2":
        out["method"] = "dflash"
    return out


# huggingface_hub's validate_repo_id (utils/_validators.py)
_REPO_ID = re.compile(r"(\b[\w\-.]{1,96}\b/)?\b[\w\-.]{1,96}\b", re.ASCII)


def _repo_id(name: str) -> bool:
    return (
        name.count("/") <= 1
        and _REPO_ID.fullmatch(name) is not None
        and "--" not in name
        and ".." not in name
        and not name.endswith(".git")
    )


def override(
    model: str,
    config: Mapping[str, Any],
    given: Mapping[str, Any] | None,
    version: str,
    *,
    present: Callable[[str], bool],
    one_file: bool = False,
) -> tuple[str, dict[str, Any]] | None:
    """``maybe_override_with_speculators``: (the verifier vLLM serves, the speculative
    config it runs) when ``model`` (whose ``config.json`` is ``config``) is a speculator;
    None otherwise; for vLLM ``version`` (a release kvconfig knows). ``given`` is
    ``--speculative-config``: its keys override, but the
    method and the drafter stay the checkpoint's. ``present`` tells whether a path exists
    on the machine (a link too); ``one_file``: the model is a file (a GGUF checkpoint).
    Raises ValueError where vLLM does."""
    checked = versions.rules(version).speculators_verifier_checked
    if one_file and checked:
        return None
    if model.startswith(_CLOUD) or config.get("speculators_config") is None:
        return None
    spec = speculative_config(config)
    method = spec["method"]
    if isinstance(given, Mapping):
        spec.update(given)
    spec["method"] = method
    spec["model"] = model
    verifier = config["speculators_config"]["verifier"]["name_or_path"]
    if checked and (not isinstance(verifier, str) or not _repo_id(verifier) or present(verifier)):
        raise ValueError(
            "a speculators verifier must name a remote model repository; choose a local "
            "verifier with --model and --speculative-config"
        )
    return str(verifier), spec
