"""KServe ``LLMInferenceService`` ``spec.speculator``: the ``--speculative-config`` its
controller appends to the decode workload's ``VLLM_ADDITIONAL_ARGS``.

As kserve/kserve builds it (``pkg/controller/v1alpha2/llmisvc/workload_speculator.go``,
added by pull request 5687, commit 2250b81f1de22128a48b6c52526a91919384c225):
``attachSpeculatorModelArtifacts`` runs for the decode workloads only (the single-node
``main`` container, the multi-node leader and worker; ``prefill pods do not receive
speculator configuration``). ``injectSpeculativeDecodingArgs`` turns ``spec.speculator.config``
(a ``map[string]string``) into a JSON object, each value typed by ``inferJSONType``
(``strconv.ParseInt`` base 10, else a finite ``ParseFloat``, else ``ParseBool``, else the
string), sets ``model`` to ``constants.DefaultSpeculatorLocalMountPath``
(``/mnt/speculator/model``, ``pkg/constants/constants.go``) when ``spec.speculator.model``
is set, marshals it with ``encoding/json`` (keys sorted), and ``appendToVLLMAdditionalArgs``
appends ``--speculative-config '<json>'`` (single quotes, a ``'`` written ``'\\''``) to the
``main`` container's ``VLLM_ADDITIONAL_ARGS`` after stripping a ``--speculative-config``
already there (``stripSpeculativeConfigFlag``), or adds the variable. A variable given by
``valueFrom`` stops the reconcile, as does a model URI whose scheme is not ``pvc://``,
``oci://``, ``hf://`` or ``s3://``; the API server refuses a config without ``method``
and a speculator model with ``lora`` (the ``SpeculatorSpec`` validation rules,
``pkg/apis/serving/v1alpha2/llm_inference_service_types.go``).
"""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kvconfig.load.kubernetes.resources import Resource

SPECULATOR_DIR = "/mnt/speculator/model"
"""``constants.DefaultSpeculatorLocalMountPath``: where the speculator model is put."""

_SCHEMES = ("pvc://", "oci://", "hf://", "s3://")
_INT = re.compile(r"^[+-]?[0-9]+$")
_DEC = re.compile(r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$")
_HEX = re.compile(r"^[+-]?0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+$")
_BOOLS = {
    **dict.fromkeys(("1", "t", "T", "TRUE", "true", "True"), True),
    **dict.fromkeys(("0", "f", "F", "FALSE", "false", "False"), False),
}


def infer_json_type(value: str) -> Any:
    """KServe's ``inferJSONType``: an int64, else a finite float, else a bool (Go's
    ``strconv.ParseBool`` spellings), else the string as written."""
    if _INT.match(value) and -(2**63) <= int(value) < 2**63:
        return int(value)
    text = value.replace("_", "") if value.lstrip("+-")[:2] in ("0x", "0X") else value
    number: float | None = None
    if _DEC.match(value):
        number = float(value)
    elif _HEX.match(text):
        number = float.fromhex(text)
    if number is not None and math.isfinite(number):
        return number
    return _BOOLS.get(value, value)


def _go_float(number: float) -> str:
    """A float64 as Go's ``encoding/json`` writes it: positional (shortest digits) for
    1e-6 <= |x| < 1e21, else exponent form with ``e-07`` written ``e-7``."""
    size = abs(number)
    if size == 0 or 1e-6 <= size < 1e21:
        return format(Decimal(repr(number)).normalize(), "f")
    return re.sub(r"e([+-])0(\d)$", r"e\1\2", repr(number))


def go_json(config: dict[str, Any]) -> str:
    """``json.Marshal`` of a ``map[string]interface{}``: keys sorted, no spaces, ``<``,
    ``>``, ``&``, U+2028 and U+2029 escaped."""
    parts = []
    for key in sorted(config):
        value = config[key]
        text = _go_float(value) if isinstance(value, float) else _go_text(value)
        parts.append(f"{_go_text(key)}:{text}")
    return "{" + ",".join(parts) + "}"


def _go_text(value: Any) -> str:
    return _go_escape(json.dumps(value, ensure_ascii=False))


def _go_escape(text: str) -> str:
    for char, code in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                       ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):  # fmt: skip
        text = text.replace(char, code)
    return text


def speculative_arg(res: Resource, spec: dict[str, Any]) -> tuple[str, str | None] | None:
    """The words KServe appends for ``spec.speculator`` (``--speculative-config '...'``,
    as shell text) and the speculator model's URI, or None without a speculator."""
    speculator = spec.get("speculator")
    if speculator is None:
        return None
    at = ("spec", "speculator")
    if not isinstance(speculator, dict):
        raise res.err(
            "spec.speculator must be a mapping (model, config)", at, "spec.speculator",
            "write spec.speculator.config.method and, for a draft model, spec.speculator.model.uri",
        )  # fmt: skip
    config = speculator.get("config") or {}
    model = speculator.get("model")
    if not isinstance(config, dict):
        raise res.err(
            "spec.speculator.config must be a mapping of strings", (*at, "config"),
            "spec.speculator.config", "write each speculative-config key as KEY: \"VALUE\"",
        )  # fmt: skip
    for key, value in config.items():
        if not isinstance(value, str):
            raise res.err(
                f"spec.speculator.config.{key} is {value!r}: KServe's API takes only strings "
                "here (map[string]string), so the API server refuses the resource",
                (*at, "config", key), f"spec.speculator.config.{key}",
                f'quote it: {key}: "{value}" (KServe types numbers and booleans again)',
            )  # fmt: skip
    if not config and model is None:
        return None
    if config and "method" not in config:
        raise res.err(
            "spec.speculator.config has no method: KServe's API requires one",
            (*at, "config"), "spec.speculator.config",
            "add method: eagle3 (or draft_model, ngram, mtp...)",
        )  # fmt: skip
    out = {str(k): infer_json_type(v) for k, v in config.items()}
    uri = None
    if isinstance(model, dict) and model.get("lora") is not None:
        raise res.err(
            "spec.speculator.model.lora: KServe's API refuses it (LoRA adapters apply only to "
            "the base model)",
            (*at, "model", "lora"), "spec.speculator.model.lora",
            "move the adapters to spec.model.lora",
        )  # fmt: skip
    if model is not None:
        uri = str(model.get("uri", "")) if isinstance(model, dict) else ""
        if "://" not in uri or not uri.startswith(_SCHEMES):
            raise res.err(
                f"spec.speculator.model.uri is {uri!r}: KServe's controller takes pvc://, "
                "oci://, hf:// or s3:// only and stops the reconcile otherwise",
                (*at, "model"), "spec.speculator.model.uri",
                "write the draft model as hf://ORG/NAME (or pvc://, oci://, s3://)",
            )  # fmt: skip
        out["model"] = SPECULATOR_DIR
    text = go_json(out).replace("'", "'\\''")
    return f"--speculative-config '{text}'", uri


def strip_speculative_config(value: str) -> str:
    """KServe's ``stripSpeculativeConfigFlag``: ``value`` without its first
    ``--speculative-config`` and the quoted text after it, spaces collapsed."""
    flag = "--speculative-config"
    idx = value.find(flag)
    if idx == -1:
        return value
    before, after = value[:idx], value[idx + len(flag) :].lstrip(" ")
    if after[:1] in ("'", '"'):
        end = _closing_quote(after[1:], after[0])
        after = after[end + 2 :] if end != -1 else ""
    return " ".join(f"{before} {after}".strip().split())


def _closing_quote(text: str, quote: str) -> int:
    i = 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == quote:
            return i
        i += 1
    return -1


def with_speculator(
    res: Resource, container: dict[str, Any], arg: str, env_path: tuple[str | int, ...]
) -> dict[str, Any]:
    """The ``main`` container with ``arg`` appended to its ``VLLM_ADDITIONAL_ARGS`` as
    KServe's ``appendToVLLMAdditionalArgs`` does."""
    if not isinstance(container.get("env") or [], list):
        return container  # the env reader refuses it
    env = [dict(e) if isinstance(e, dict) else e for e in container.get("env") or []]
    for i, item in enumerate(env):
        if isinstance(item, dict) and item.get("name") == "VLLM_ADDITIONAL_ARGS":
            if item.get("valueFrom") is not None:
                raise res.err(
                    "VLLM_ADDITIONAL_ARGS is set by valueFrom: KServe's controller cannot "
                    "append spec.speculator's --speculative-config to it and stops the reconcile",
                    (*env_path, i), "VLLM_ADDITIONAL_ARGS",
                    "give VLLM_ADDITIONAL_ARGS as a value, or drop spec.speculator",
                )  # fmt: skip
            cleaned = strip_speculative_config(str(item.get("value") or ""))
            item["value"] = f"{cleaned} {arg}".strip()
            return {**container, "env": env}
    return {**container, "env": [*env, {"name": "VLLM_ADDITIONAL_ARGS", "value": arg}]}
