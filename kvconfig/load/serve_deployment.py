"""The ``Deployment`` of a ``vllm serve`` configuration (a YAML file or a pasted command).

The target's layers come from its ``config.json`` (``kvconfig.derive``), the drafter's
from its own; the options that change the plan become the deployment's fields. Every
value is checked here, where the option and its line are known; the ``Deployment`` then
checks how the values fit together.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from kvconfig._suggest import same_first_word
from kvconfig.derive.inputs import Context, Model, pos_int
from kvconfig.derive.layers import (
    ATTENTION_FREE,
    derive,
    model_context_length,
    model_dtype,
    model_facts,
)
from kvconfig.errors import DeploymentError, InputError, describe
from kvconfig.load.checks import PLAN_ENV, check_env, runner_from_env
from kvconfig.load.drafter import speculator
from kvconfig.load.models import model_at
from kvconfig.load.serve import (
    Options,
    backend_name,
    cache_dtype,
    check_keys,
    int_option,
    json_option,
    maybe_json,
)
from kvconfig.mirror import speculative, speculators, versions
from kvconfig.mirror.connectors.registry import effective_kv_transfer, hma_disabled
from kvconfig.schemas.deployment import AttentionSettings, Deployment, LayerSet

MAX_LAYERS = 10_000
"""Most attention layers kvconfig plans for in one deployment (real models have a few hundred)."""


def to_deployment(
    opts: Options, version: str, env: Mapping[str, str], overrides: Mapping[str, Any]
) -> Deployment:
    """The deployment of a serve configuration; ``overrides`` are fields the caller sets
    (``hooks``, ``trtllm_cubins``, ``platform``)."""
    f = versions.facts(version)
    merged_env = {**opts.env, **env}
    check_env(opts.env, opts.source, key="")
    check_env(env, "")
    known_archs = f.architectures
    if "model" not in opts.values:
        raise InputError(
            "no model given", source=opts.source, key="model", hint="add 'model: PATH'"
        )
    dtype_opt = opts.values.get("dtype")
    kv_dtype = cache_dtype(
        opts, "kv-cache-dtype", opts.values.get("kv-cache-dtype", "auto"), version
    )
    tp = int_option(opts, "tensor-parallel-size", high=1024) or 1
    block_size = int_option(opts, "block-size", high=1 << 16)

    attention = json_option(opts, "attention-config") or {}
    check_keys(opts, "attention-config", attention, f.attention_config_keys)
    cli_backend = backend_name(
        opts, "attention-backend", opts.values.get("attention-backend"), version
    )
    if opts.values.get("attention-backend") is not None and attention.get("backend") is not None:
        # EngineArgs.create_engine_config: "mutually exclusive", even when one says auto
        raise opts.err(
            "attention-backend",
            "--attention-backend and attention-config.backend are both set",
            "keep one: vLLM refuses the two together",
        )
    per_kind = attention.get("backend_per_kind") or {}
    if not isinstance(per_kind, dict):
        raise opts.err(
            "attention-config.backend_per_kind",
            f"expected a mapping of layer kind to backend, got {describe(per_kind)}",
            "e.g. {sliding_window: FLASH_ATTN}",
        )
    for kind in per_kind:
        if kind not in f.spec_kinds:
            raise opts.err(
                f"attention-config.backend_per_kind.{kind}",
                f"unknown KV-cache group kind {kind!r}",
                same_first_word(str(kind), f.spec_kinds) or f"use one of {', '.join(f.spec_kinds)}",
            )
    trt = attention.get("use_trtllm_attention")
    if trt is not None and not isinstance(trt, bool):
        raise opts.err(
            "attention-config.use_trtllm_attention",
            f"expected true or false, got {describe(trt)}",
            "write true or false, unquoted",
        )
    fa = attention.get("flash_attn_version")
    if fa is not None and (isinstance(fa, bool) or fa not in (2, 3, 4)):
        raise opts.err(
            "attention-config.flash_attn_version",
            f"expected 2, 3 or 4, got {describe(fa)}",
            "leave it out to let vLLM choose",
        )

    hf_overrides = json_option(opts, "hf-overrides") or {}
    model_key = "hf-config-path" if opts.values.get("hf-config-path") else "model"
    target = model_at(opts, model_key, opts.values[model_key], opts.values.get("revision"))
    spec = json_option(opts, "speculative-config")
    if model_key == "model":
        target, spec = _speculators(opts, target, spec, version)
    if hf_overrides:
        target = Model(target.path, {**target.config, **hf_overrides})
    dtype = model_dtype(target.text, dtype_opt if isinstance(dtype_opt, str) else None)
    context = _derive_context(opts, spec, tp, merged_env)
    declared = target.text.get("num_hidden_layers")
    if isinstance(declared, int) and declared > MAX_LAYERS:
        # refuse before deriving: some layouts build per-layer lists
        raise opts.err(
            model_key,
            f"the model has {declared} attention layers; kvconfig plans at most {MAX_LAYERS}",
            "check num_hidden_layers in its config.json",
        )
    derived = derive(target, dtype, known=known_archs, context=context)
    layers = [{**s, "role": "target"} for s in derived]
    n_target = (
        pos_int(target.text, "num_hidden_layers", target.path)
        if "num_hidden_layers" in target.text
        # a config that names its layer count otherwise (GPT-2's n_layer): the derived one
        else max(int(s["first_index"]) + int(s["count"]) for s in derived)
    )

    method = None
    draft_backend = None
    if spec is not None:
        method, draft_layers, draft_backend = speculator(
            opts, spec, dtype, n_target, f, target=target, context=context
        )
        layers.extend(draft_layers)
    total = sum(int(s["count"]) for s in layers)
    if total > MAX_LAYERS:
        raise opts.err(
            model_key,
            f"the model has {total} attention layers; kvconfig plans at most {MAX_LAYERS}",
            "check num_hidden_layers in its config.json",
        )
    runner = _runner(opts, merged_env, spec, method)
    fields: dict[str, Any] = {
        "source": opts.source,
        "vllm_version": version,
        "runner": runner,
        "block_size": block_size,
        "kv_cache_dtype": kv_dtype,
        "tensor_parallel_size": tp,
        "attention": AttentionSettings(
            backend=cli_backend
            or backend_name(opts, "attention-config.backend", attention.get("backend"), version),
            backend_per_kind=_per_kind_backends(opts, per_kind, version),
            use_trtllm_attention=trt,
            flash_attn_version=fa,
        ),
        "speculative_method": method,
        "draft_attention_backend": draft_backend,
        "num_speculative_tokens": context.num_speculative_tokens,
        "prefix_caching": _prefix_caching(
            opts.values.get("enable-prefix-caching"), target.architecture
        ),
        "disable_hybrid_kv_cache_manager": _hma_disabled(opts, layers, method, merged_env),
        "max_model_len": _max_model_len(opts, target, merged_env),
        "model_facts": model_facts(target),
        "kv_cache_layout": merged_env.get("VLLM_KV_CACHE_LAYOUT"),
        "env": {k: v for k, v in merged_env.items() if k in PLAN_ENV},
        "layers": [LayerSet(**s) for s in layers],
        **overrides,
    }
    if merged_env.get("VLLM_HAS_FLASHINFER_CUBIN", "0").strip() not in ("", "0"):
        # vLLM's has_flashinfer_cubin(): the variable vouches for the cubins, whatever
        # is installed (so TRT-LLM attention is available where the GPU has it)
        fields["trtllm_cubins"] = True
    try:
        return Deployment(**fields)
    except DeploymentError as err:
        key = ".".join(str(part) for part in err.loc)
        raise InputError(err.message, source=opts.source, key=key, hint=err.hint) from None


def _speculators(
    opts: Options, target: Model, spec: dict[str, Any] | None, version: str
) -> tuple[Model, dict[str, Any] | None]:
    """A speculators checkpoint as ``--model``: vLLM serves the verifier it names, the
    checkpoint its drafter (``kvconfig.mirror.speculators.override``)."""
    model = str(opts.values["model"])
    try:
        found = speculators.override(
            model,
            target.config,
            spec,
            version,
            present=os.path.lexists,
            one_file=os.path.isfile(model),
        )
    except ValueError as err:
        raise opts.err(
            "model",
            f"vLLM refuses this speculators checkpoint: {err}",
            "serve the verifier with --model and name the drafter in --speculative-config",
        ) from None
    if found is None:
        return target, spec
    verifier, spec = found
    return model_at(opts, "model", verifier, opts.values.get("revision")), spec


def _per_kind_backends(opts: Options, per_kind: Mapping[str, Any], version: str) -> dict[str, str]:
    """``attention-config.backend_per_kind``, each backend parsed (``auto`` leaves a kind out)."""
    out = {}
    for kind, value in per_kind.items():
        name = backend_name(opts, f"attention-config.backend_per_kind.{kind}", value, version)
        if name is not None:
            out[str(kind)] = name
    return out


def _derive_context(
    opts: Options, spec: Mapping[str, Any] | None, tp: int, env: Mapping[str, str]
) -> Context:
    """The deployment facts derivers need (ranks, speculative tokens, Mamba dtypes,
    ``VLLM_MLA_DISABLE``, which vLLM reads as ``bool(int(value))``; ``check_env`` has
    checked it is an integer)."""
    num_spec = 0
    if spec is not None:
        raw = spec.get("num_speculative_tokens", 0)
        if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
            raise opts.err(
                "speculative-config.num_speculative_tokens",
                f"expected a non-negative integer, got {raw!r}",
                "e.g. 3",
            )
        num_spec = raw
    return Context(
        tensor_parallel_size=tp,
        num_speculative_tokens=num_spec,
        mamba_cache_dtype=str(opts.values.get("mamba-cache-dtype", "auto")),
        mamba_ssm_cache_dtype=str(opts.values.get("mamba-ssm-cache-dtype", "auto")),
        language_model_only=bool(opts.values.get("language-model-only")),
        mm_limits=_mm_limits(opts),
        mm_embeds=bool(opts.values.get("enable-mm-embeds")),
        mla_disabled=bool(int(env.get("VLLM_MLA_DISABLE", "0").strip() or "0")),
    )


def _mm_limits(opts: Options) -> dict[str, int]:
    """``--limit-mm-per-prompt``: a count per modality, or ``{count: n, ...}`` per modality
    (``MultiModalConfig.limit_per_prompt``)."""
    key = "limit-mm-per-prompt"
    raw = opts.values.get(key)
    if raw is None:
        return {}
    if isinstance(raw, str):
        raw = maybe_json(raw)
    if not isinstance(raw, dict):
        raise opts.err(
            key,
            f"expected a mapping of modality to count, got {describe(raw)}",
            'e.g. {"image": 0}',
        )
    out = {}
    for modality, value in raw.items():
        count = value.get("count") if isinstance(value, dict) else value
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise opts.err(
                f"{key}.{modality}",
                f"expected a count of 0 or more, got {describe(count)}",
                "e.g. 0 to serve no item of this modality",
            )
        out[str(modality)] = count
    return out


def _runner(
    opts: Options, env: Mapping[str, str], spec: Mapping[str, Any] | None, method: str | None
) -> str:
    if "VLLM_USE_V2_MODEL_RUNNER" in env:
        return runner_from_env(env, opts.source)
    if spec is not None:
        if method in speculative.V1_ONLY:
            return "v1"
        if spec.get("parallel_drafting") and method not in ("dflash", "dspark"):
            return "v1"
        if spec.get("use_heterogeneous_vocab"):
            return "v1"
    return "v2"


def _prefix_caching(given: object, architecture: str) -> bool:
    """``--enable-prefix-caching``, or vLLM's default (``is_prefix_caching_supported``):
    on, except for attention-free architectures (vLLM's ``IsAttentionFree`` models; a
    hybrid whose config happens to list only Mamba layers keeps it on)."""
    if given is not None:
        return given is not False
    return architecture not in ATTENTION_FREE


#: ``SpeculativeConfig.use_eagle``: methods that draft from the target's hidden states.
EAGLE_METHODS = ("eagle", "eagle3", "mtp", "dflash", "dspark")


def _hma_disabled(
    opts: Options, layers: list[dict[str, Any]], method: str | None, env: Mapping[str, str]
) -> bool:
    """Whether vLLM runs without the hybrid KV-cache manager (``VllmConfig.__post_init__``):
    as asked, else when the KV connector lacks HMA support (``hma_disabled``), and
    whenever chunked-local attention meets an EAGLE-style drafter or
    ``VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=0`` (default 1); asking for HMA
    then is vLLM's ValueError."""
    given = opts.values.get("disable-hybrid-kv-cache-manager")
    kv = effective_kv_transfer(json_option(opts, "kv-transfer-config"), opts.values, env)
    disabled = hma_disabled(kv, given)
    chunked = any(s["kind"] == "chunked_local" and s["role"] == "target" for s in layers)
    allowed = env.get("VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE", "1").strip() or "1"
    if not chunked or (method not in EAGLE_METHODS and int(allowed)):
        return disabled
    if given is False:
        raise opts.err(
            "disable-hybrid-kv-cache-manager",
            "the hybrid KV-cache manager was asked for, but vLLM does not support it with "
            "chunked-local attention "
            + (
                "and an EAGLE-style drafter"
                if method in EAGLE_METHODS
                else "while VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=0"
            )
            + " (vLLM raises ValueError)",
            "leave --disable-hybrid-kv-cache-manager unset to let vLLM decide",
        )
    return True


#: RoPE types whose ``factor`` scales the model's length (``_get_and_verify_max_len``).
SCALING_ROPE = ("su", "longrope", "llama3", "yarn", "deepseek_yarn", "deepseek_llama_scaling")


def _max_model_len(opts: Options, target: Model, env: Mapping[str, str]) -> int | None:
    """``--max-model-len``, or the model's own length. vLLM refuses a length above the one
    its config derives (``_get_and_verify_max_len``: "User-specified max_model_len ... is
    greater than the derived max_model_len") unless ``model_max_length`` allows it or
    ``VLLM_ALLOW_LONG_MAX_MODEL_LEN`` is 1/true. Where RoPE scaling may lengthen the
    model (a scaling ``rope_type``) or a tokenizer may shorten it, kvconfig cannot tell
    the derived length from ``config.json`` alone and does not refuse."""
    given = int_option(opts, "max-model-len", high=1 << 26)
    derived = model_context_length(target)
    if given is None or given == -1 or derived is None or given <= derived:
        return given or derived
    allowed = env.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "0").strip().lower() in ("1", "true")
    cfg = target.text
    override = cfg.get("model_max_length")
    if allowed or (isinstance(override, int) and given <= override) or _scaled_rope(cfg):
        return given
    raise opts.err(
        "max-model-len",
        f"{given} is greater than the model's length {derived} (its config.json): vLLM refuses it",
        f"lower --max-model-len to {derived}, or set VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 if the "
        "model really handles longer sequences",
    )


def _scaled_rope(cfg: Mapping[str, Any]) -> bool:
    """Whether any RoPE parameters (``rope_scaling``, ``rope_parameters``, per layer type
    too) name a type whose factor scales the length."""
    found: list[Mapping[str, Any]] = []
    for key in ("rope_scaling", "rope_parameters"):
        value = cfg.get(key)
        if isinstance(value, Mapping):
            found.append(value)
            found.extend(v for v in value.values() if isinstance(v, Mapping))
    return any(str(p.get("rope_type", p.get("type"))) in SCALING_ROPE for p in found)
