"""The speculator of a ``vllm serve`` configuration: its method, its layers (from the
drafter's own ``config.json``, or the target's MTP layers) and its attention backend."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvconfig._suggest import did_you_mean
from kvconfig.derive.inputs import Context, Model
from kvconfig.derive.layers import derive, derive_mtp
from kvconfig.errors import UnsupportedArchitecture, describe
from kvconfig.load.models import model_at
from kvconfig.load.serve import Options, backend_name, cache_dtype, check_keys
from kvconfig.mirror import speculative, speculators, versions


def speculator(
    opts: Options,
    spec: Mapping[str, Any],
    dtype: str,
    n_target: int,
    f: versions.Facts,
    *,
    target: Model,
    context: Context,
) -> tuple[str, list[dict[str, Any]], str | None]:
    """``--speculative-config``: the method, the draft layer sets (role ``draft``) and
    the drafter's requested attention backend."""
    version = f.version
    check_keys(opts, "speculative-config", spec, f.speculative_config_keys)
    if "tensor_parallel_size" in spec:
        raise opts.err(
            "speculative-config.tensor_parallel_size",
            "not a valid speculative-config key in vLLM",
            "use draft_tensor_parallel_size",
        )
    try:
        method, draft_layers = _method_and_layers(
            opts, spec, dtype, n_target, f, target=target, context=context
        )
    except UnsupportedArchitecture as err:
        if err.source != opts.source:
            raise
        raise UnsupportedArchitecture(
            f"{target.architecture} with its {err.architecture}", opts.source
        ) from None
    draft_kv = spec.get("kv_cache_dtype")
    if draft_kv is not None:
        draft_kv = cache_dtype(opts, "speculative-config.kv_cache_dtype", draft_kv, version)
    for s in draft_layers:
        s["role"] = "draft"
        if draft_kv is not None:
            s["kv_cache_dtype"] = draft_kv
    draft_backend = backend_name(
        opts, "speculative-config.attention_backend", spec.get("attention_backend"), version
    )
    return method, draft_layers, draft_backend


def _method_and_layers(
    opts: Options,
    spec: Mapping[str, Any],
    dtype: str,
    first_index: int,
    f: versions.Facts,
    *,
    target: Model,
    context: Context,
) -> tuple[str, list[dict[str, Any]]]:
    """The speculative method, as vLLM's ``SpeculativeConfig`` settles it, and the
    drafter's layer sets (vLLM names a separate draft model's layers ``draft_model.*``)."""
    method = spec.get("method")
    model = spec.get("model")
    if method is not None and not isinstance(method, str):
        raise opts.err(
            "speculative-config.method",
            f"expected a method name, got {describe(method)}",
            "e.g. eagle3, mtp, draft_model, ngram",
        )
    if method is not None and method not in f.speculative_methods:
        raise opts.err(
            "speculative-config.method",
            f"unknown speculative method {method!r} for vLLM {f.version}",
            did_you_mean(method, f.speculative_methods) or "e.g. eagle3, mtp, draft_model, ngram",
        )
    known = f.architectures
    method = speculative.canonical(method, f.mtp_methods)
    if method in speculative.WITHOUT_DRAFT_MODEL or model in ("ngram", "[ngram]"):
        return (method or "ngram"), []
    if method in ("custom_class", "extract_hidden_states") or (
        model is None and method == "dspark"
    ):
        # vLLM takes these drafters from a Python class or from the target checkpoint itself;
        # kvconfig cannot derive their layers from a config.json.
        raise UnsupportedArchitecture(f"{method} drafter", opts.source)
    if model is not None and not isinstance(model, str):
        raise opts.err(
            "speculative-config.model",
            f"expected the drafter's folder, got {describe(model)}",
            "e.g. model: ./eagle3-drafter",
        )
    if method == "mtp":
        if model is None:
            return method, derive_mtp(target, dtype, context)
        own = model_at(opts, "speculative-config.model", model, spec.get("revision"))
        own = _in_vllm_form(opts, "speculative-config.model", own)
        return method, derive_mtp(own, dtype, context)
    if model is None:
        raise opts.err(
            "speculative-config.model",
            f"speculative method {method or 'draft_model'!r} needs a draft model",
            "set speculative-config.model to the drafter's folder",
        )
    if method is None or method == "draft_model":
        method = speculative.named_by_model(model)
    key = "speculative-config.model"
    draft = _in_vllm_form(opts, key, model_at(opts, key, model, spec.get("revision")))
    if method in ("eagle", "eagle3"):
        layers = derive(
            draft, dtype, first_index=first_index, draft=True, known=known, context=context
        )
    else:
        layers = derive(draft, dtype, first_index=0, known=known, context=context)
        for s in layers:
            s["name"] = "draft_model." + str(s["name"])
    return method, layers


def _in_vllm_form(opts: Options, key: str, draft: Model) -> Model:
    """A drafter in the speculators format as vLLM reads it: its layer config
    (``kvconfig.mirror.speculators.layer_config``)."""
    if not speculators.is_drafter(draft.config):
        return draft
    try:
        return Model(draft.path, speculators.layer_config(draft.config))
    except (ValueError, KeyError, TypeError) as err:
        why = f"no {err}" if isinstance(err, KeyError) else str(err)
        raise opts.err(
            key,
            f"vLLM cannot read this speculators checkpoint: {why}",
            "use a checkpoint the speculators library wrote, or one in Hugging Face's form",
        ) from None
