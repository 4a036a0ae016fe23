"""``vllm serve`` configurations (YAML files and pasted commands) as deployments.

A ``vllm serve --config FILE`` YAML holds the command's options as keys. Both
forms become a list of options, checked against the options vLLM's ``serve``
parser knows (shipped as data per vLLM version), then turned into the
``Deployment`` document: the target's layers from its ``config.json``, the
drafter's from its own, and the settings that change the plan.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kvconfig import _hf, _yaml
from kvconfig._catalog import DATA
from kvconfig._suggest import did_you_mean
from kvconfig.errors import InputError

#: Environment variables that change the plan (others are accepted and ignored).
PLAN_ENV = (
    "VLLM_USE_V2_MODEL_RUNNER",
    "VLLM_BATCH_INVARIANT",
    "VLLM_KV_CACHE_LAYOUT",
)

#: Flags that store the opposite of their name into vLLM's option (argparse store_false).
NEGATING_FLAGS = frozenset({"disable-prefix-caching", "enable-hybrid-kv-cache-manager"})

#: Options whose value is a JSON object (or a YAML mapping in a config file).
JSON_OPTIONS = frozenset(
    {"speculative-config", "attention-config", "hf-overrides", "compilation-config"}
)


@functools.cache
def facts(version: str) -> Mapping[str, Any]:
    """The shipped facts about a vLLM version (serve options, config keys, dtypes)."""
    path = DATA / f"vllm-{version}" / "facts.json"
    if not path.is_file():
        raise InputError(f"no data for vLLM {version}", key="--vllm-version")
    with path.open(encoding="utf-8") as f:
        data: Mapping[str, Any] = json.load(f)
    return data


@dataclass
class Options:
    """Normalised ``vllm serve`` options: name (dashes) -> value, and where each was set."""

    source: str
    base: Path
    values: dict[str, Any] = field(default_factory=dict)
    lines: dict[str, int | None] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)

    def err(self, key: str, message: str, hint: str = "") -> InputError:
        """An InputError located at ``key``."""
        return InputError(
            message, source=self.source, line=self.lines.get(key.split(".")[0]), key=key, hint=hint
        )


def _canonical(name: str) -> str:
    """vLLM's normalisation: underscores become dashes before the first dot."""
    head, dot, rest = name.partition(".")
    return head.replace("_", "-") + dot + rest


def _option(opts: Options, raw_key: str, value: Any, line: int | None, version: str) -> None:
    known: Mapping[str, Any] = facts(version)["serve_options"]
    key = _canonical(str(raw_key).removeprefix("--"))
    head, _, nested = key.partition(".")
    spec = known.get(f"--{head}")
    if spec is None and head.startswith("no-") and f"--{head[3:]}" in known:
        spec, head, value = known[f"--{head[3:]}"], head[3:], False
    if head in NEGATING_FLAGS and isinstance(value, bool):
        value = not value
    if spec is None:
        names = [k.removeprefix("--") for k in known if k.startswith("--")]
        raise InputError(
            f"unknown vLLM {version} option {raw_key!r}",
            source=opts.source,
            line=line,
            key=str(raw_key),
            hint=did_you_mean(head, names) or "see 'vllm serve --help'",
        )
    dest = str(spec["dest"]).replace("_", "-")
    opts.lines.setdefault(dest, line)
    if nested:
        if dest not in JSON_OPTIONS:
            raise InputError(
                f"{head!r} takes no sub-keys", source=opts.source, line=line, key=key,
                hint=f"write '{head}: value'",
            )
        current = opts.values.setdefault(dest, {})
        if not isinstance(current, dict):
            raise opts.err(key, f"{head!r} is given both whole and by sub-keys", "use one form")
        node = current
        parts = nested.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = _maybe_json(value)
        return
    if dest in opts.values and dest not in ("model",):
        raise InputError(
            f"{head!r} is given twice", source=opts.source, line=line, key=head, hint="keep one"
        )
    opts.values[dest] = value


def _maybe_json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def options_from_yaml(doc: _yaml.Document, version: str) -> Options:
    """Options from a ``vllm serve --config`` YAML document."""
    if not isinstance(doc.data, dict):
        what = "empty" if doc.data is None else f"a {type(doc.data).__name__}"
        raise InputError(
            f"the file is {what}, not a mapping of vllm serve options",
            source=doc.source,
            line=1,
            hint="write 'option: value' lines, e.g. 'model: ./qwen3-8b'",
        )
    opts = Options(doc.source, Path(doc.source).resolve().parent)
    for key, value in doc.data.items():
        _option(opts, str(key), value, doc.line(key), version)
    return opts


_ENV_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def options_from_command(argv: Sequence[str], version: str, cwd: Path) -> Options:
    """Options from a pasted ``[VAR=value ...] vllm serve MODEL --opt value ...`` command."""
    tokens = list(argv)
    if len(tokens) == 1 and " " in tokens[0]:
        try:
            tokens = shlex.split(tokens[0])
        except ValueError as err:
            raise InputError(f"cannot split the command: {err}", source="<command>") from err
    opts = Options("<command>", cwd)
    while tokens and _ENV_ASSIGN.match(tokens[0]):
        name, _, value = tokens.pop(0).partition("=")
        opts.env[name] = value
    if tokens[:1] == ["env"]:
        tokens.pop(0)
        while tokens and _ENV_ASSIGN.match(tokens[0]):
            name, _, value = tokens.pop(0).partition("=")
            opts.env[name] = value
    if tokens[:2] == ["vllm", "serve"]:
        tokens = tokens[2:]
    elif len(tokens) >= 3 and tokens[1] == "-m" and tokens[2] in (
        "vllm.entrypoints.openai.api_server",
        "vllm.entrypoints.cli.main",
    ):
        tokens = tokens[3:] if tokens[2].endswith("api_server") else tokens[4:]
    else:
        raise InputError(
            "expected a 'vllm serve ...' command",
            source="<command>",
            hint="paste it after '--': kvconfig lint --platform h200 -- vllm serve MODEL ...",
        )
    known: Mapping[str, Any] = facts(version)["serve_options"]
    i = 0
    position = 0
    while i < len(tokens):
        tok = tokens[i]
        if not tok.startswith("-") or tok == "-":
            if position == 0:
                opts.values["model"] = tok
                opts.lines["model"] = None
                position += 1
                i += 1
                continue
            raise InputError(
                f"unexpected argument {tok!r}", source="<command>", hint="options start with --"
            )
        name, eq, inline = tok.partition("=")
        if name == "--config":
            value = inline if eq else (tokens[i + 1] if i + 1 < len(tokens) else "")
            i += 1 if eq else 2
            doc = _yaml.load((cwd / value), value)
            nested = options_from_yaml(doc, version)
            for k, v in nested.values.items():
                opts.values.setdefault(k, v)
                opts.lines.setdefault(k, None)
            opts.base = nested.base
            continue
        head = _canonical(name.removeprefix("--")).partition(".")[0] if name.startswith("--") else name
        spec = known.get(f"--{head}") if name.startswith("--") else known.get(name)
        takes_value = bool(spec["value"]) if spec is not None else True
        if "." in name or (spec is not None and takes_value) or spec is None:
            if eq:
                value_str: Any = inline
                i += 1
            elif spec is not None and not takes_value:
                value_str, i = True, i + 1
            elif i + 1 < len(tokens):
                value_str = tokens[i + 1]
                i += 2
            else:
                raise InputError(f"{name} needs a value", source="<command>", key=name)
        else:
            value_str, i = True, i + 1
        key = name if name.startswith("--") else (spec["dest"] if spec else name)
        _option(opts, key, value_str, None, version)
    return opts


def _json_option(opts: Options, name: str) -> dict[str, Any] | None:
    value = opts.values.get(name)
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as err:
            raise opts.err(
                name,
                f"invalid JSON at column {err.colno}: {err.msg}",
                "write it as a mapping in YAML, or as valid JSON in quotes",
            ) from err
    if not isinstance(value, dict):
        raise opts.err(name, f"expected a mapping, got {type(value).__name__}", "e.g. {\"key\": value}")
    return value


def _int_option(opts: Options, name: str, low: int = 1, high: int = 1 << 20) -> int | None:
    value = opts.values.get(name)
    if value is None:
        return None
    if isinstance(value, bool):
        raise opts.err(name, f"expected an integer, got {value!r}", "e.g. 128")
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError as err:
            raise opts.err(name, f"expected an integer, got {value!r}", "e.g. 128") from err
    if not isinstance(value, int):
        raise opts.err(name, f"expected an integer, got {value!r}", "e.g. 128")
    if not low <= value <= high:
        raise opts.err(name, f"{value} is out of range", f"expected {low} to {high}")
    return value


def _check_keys(opts: Options, name: str, given: Mapping[str, Any], known: Sequence[str]) -> None:
    for key in given:
        if key not in known:
            raise opts.err(
                f"{name}.{key}",
                f"unknown key {key!r}",
                did_you_mean(str(key), known) or f"see vLLM's {name} fields",
            )


def _backend_name(opts: Options, key: str, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise opts.err(key, f"expected a backend name, got {value!r}", "e.g. FLASHINFER")
    return None if value.strip().lower() == "auto" else value.strip().upper()


def _model_path(opts: Options, key: str, value: Any) -> Path:
    if not isinstance(value, str) or not value.strip():
        raise opts.err(key, f"expected a model path, got {value!r}", "a folder holding config.json")
    path = Path(os.path.expanduser(value))
    if not path.is_absolute():
        path = opts.base / path
    if path.exists():
        return path
    cached = _hf.hub_cache_folder(value)
    if cached is not None:
        return cached
    raise opts.err(
        key,
        f"{value!r} is neither a local folder nor in the Hugging Face cache",
        "kvconfig never downloads: point it at a folder with the model's config.json",
    )


def to_document(opts: Options, version: str, env: Mapping[str, str]) -> dict[str, Any]:
    """The ``Deployment`` document of a serve configuration."""
    f = facts(version)
    merged_env = {**opts.env, **env}
    known_archs = frozenset(f["architectures"])
    if "model" not in opts.values:
        raise InputError(
            "no model given", source=opts.source, key="model", hint="add 'model: PATH'"
        )
    dtype_opt = opts.values.get("dtype")
    kv_dtype = opts.values.get("kv-cache-dtype", "auto")
    if kv_dtype not in f["kv_cache_dtypes"]:
        raise opts.err(
            "kv-cache-dtype",
            f"unknown KV-cache dtype {kv_dtype!r}",
            did_you_mean(str(kv_dtype), f["kv_cache_dtypes"]) or "e.g. auto, fp8",
        )
    tp = _int_option(opts, "tensor-parallel-size", high=1024) or 1
    block_size = _int_option(opts, "block-size", high=1 << 16)

    attention = _json_option(opts, "attention-config") or {}
    _check_keys(opts, "attention-config", attention, f["attention_config_keys"])
    cli_backend = _backend_name(opts, "attention-backend", opts.values.get("attention-backend"))
    if cli_backend and attention.get("backend"):
        raise opts.err(
            "attention-backend",
            "--attention-backend and attention-config.backend are both set",
            "vLLM accepts only one of them",
        )
    per_kind = attention.get("backend_per_kind") or {}
    if not isinstance(per_kind, dict):
        raise opts.err("attention-config.backend_per_kind", "expected a mapping of kind: backend")
    trt = attention.get("use_trtllm_attention")
    if trt is not None and not isinstance(trt, bool):
        raise opts.err("attention-config.use_trtllm_attention", f"expected true or false, got {trt!r}")
    fa = attention.get("flash_attn_version")
    if fa is not None and fa not in (2, 3, 4):
        raise opts.err("attention-config.flash_attn_version", f"expected 2, 3 or 4, got {fa!r}")

    hf_overrides = _json_option(opts, "hf-overrides") or {}
    target_path = _model_path(opts, "model", opts.values.get("hf-config-path") or opts.values["model"])
    target = _hf.read_model(target_path, opts.source, "model")
    if hf_overrides:
        target = _hf.Model(target.path, {**target.config, **hf_overrides})
    dtype = _hf.model_dtype(target.text, dtype_opt if isinstance(dtype_opt, str) else None)
    spec = _json_option(opts, "speculative-config")
    context = _derive_context(opts, spec, tp)
    layers = [
        {**s, "role": "target"}
        for s in _hf.derive(target, dtype, known=known_archs, context=context)
    ]
    n_target = _hf.pos_int(target.text, "num_hidden_layers", target.path)

    method = None
    draft_backend = None
    if spec is not None:
        _check_keys(opts, "speculative-config", spec, f["speculative_config_keys"])
        if "tensor_parallel_size" in spec:
            raise opts.err(
                "speculative-config.tensor_parallel_size",
                "not a valid speculative-config key in vLLM",
                "use draft_tensor_parallel_size",
            )
        method, draft_layers = _drafter(
            opts, spec, dtype, n_target, known_archs, target=target, context=context
        )
        draft_kv = spec.get("kv_cache_dtype")
        if draft_kv is not None and draft_kv not in f["kv_cache_dtypes"]:
            raise opts.err("speculative-config.kv_cache_dtype", f"unknown KV-cache dtype {draft_kv!r}")
        for s in draft_layers:
            s["role"] = "draft"
            if draft_kv is not None:
                s["kv_cache_dtype"] = draft_kv
        layers.extend(draft_layers)
        draft_backend = _backend_name(
            opts, "speculative-config.attention_backend", spec.get("attention_backend")
        )
    runner = _runner(opts, merged_env, spec, method)
    return {
        "source": opts.source,
        "vllm_version": version,
        "runner": runner,
        "block_size": block_size,
        "kv_cache_dtype": kv_dtype,
        "tensor_parallel_size": tp,
        "attention": {
            "backend": cli_backend or _backend_name(opts, "attention-config.backend", attention.get("backend")),
            "backend_per_kind": {
                str(k): _backend_name(opts, f"attention-config.backend_per_kind.{k}", v)
                for k, v in per_kind.items()
            },
            "use_trtllm_attention": trt,
            "flash_attn_version": fa,
        },
        "speculative_method": method,
        "draft_attention_backend": draft_backend,
        "num_speculative_tokens": context.num_speculative_tokens,
        "prefix_caching": opts.values.get("enable-prefix-caching") is not False,
        "disable_hybrid_kv_cache_manager": bool(opts.values.get("disable-hybrid-kv-cache-manager")),
        "max_model_len": _int_option(opts, "max-model-len", high=1 << 26)
        or _hf.model_context_length(target),
        "model_facts": _hf.model_facts(target),
        "kv_cache_layout": merged_env.get("VLLM_KV_CACHE_LAYOUT"),
        "env": {k: v for k, v in merged_env.items() if k in PLAN_ENV},
        "layers": layers,
    }


def _derive_context(opts: Options, spec: Mapping[str, Any] | None, tp: int) -> _hf.Context:
    """The deployment facts derivers need (ranks, speculative tokens, Mamba dtypes)."""
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
    return _hf.Context(
        tensor_parallel_size=tp,
        num_speculative_tokens=num_spec,
        mamba_cache_dtype=str(opts.values.get("mamba-cache-dtype", "auto")),
        mamba_ssm_cache_dtype=str(opts.values.get("mamba-ssm-cache-dtype", "auto")),
    )


def _drafter(
    opts: Options,
    spec: Mapping[str, Any],
    dtype: str,
    first_index: int,
    known: frozenset[str],
    *,
    target: _hf.Model,
    context: _hf.Context,
) -> tuple[str, list[dict[str, Any]]]:
    method = spec.get("method")
    model = spec.get("model")
    if method is not None and not isinstance(method, str):
        raise opts.err("speculative-config.method", f"expected a name, got {method!r}")
    if method in ("ngram", "suffix", "ngram_gpu") or model in ("ngram", "[ngram]"):
        return (method or "ngram"), []
    if method == "mtp":
        if model is None:
            return method, _hf.derive_mtp(target, dtype, context)
        if not isinstance(model, str):
            raise opts.err("speculative-config.model", f"expected a path, got {model!r}")
        own = _hf.read_model(
            _model_path(opts, "speculative-config.model", model), opts.source,
            "speculative-config.model",
        )
        return method, _hf.derive_mtp(own, dtype, context)
    if model is None:
        raise opts.err(
            "speculative-config.model",
            f"speculative method {method or 'draft_model'!r} needs a draft model",
            "set speculative-config.model to the drafter's folder",
        )
    if not isinstance(model, str):
        raise opts.err("speculative-config.model", f"expected a path, got {model!r}")
    if method is None or method == "draft_model":
        low = model.lower()
        method = (
            "eagle" if "eagle-" in low else
            "eagle3" if "eagle3" in low else
            "dflash" if "dflash" in low else
            "dspark" if "dspark" in low else
            "draft_model"
        )
    path = _model_path(opts, "speculative-config.model", model)
    draft = _hf.read_model(path, opts.source, "speculative-config.model")
    if method in ("eagle", "eagle3"):
        layers = _hf.derive(
            draft, dtype, first_index=first_index, draft=True, known=known, context=context
        )
    else:
        layers = _hf.derive(draft, dtype, first_index=0, known=known, context=context)
        for s in layers:
            s["name"] = "draft_model." + str(s["name"])
    return method, layers


def _runner(
    opts: Options, env: Mapping[str, str], spec: Mapping[str, Any] | None, method: str | None
) -> str:
    value = env.get("VLLM_USE_V2_MODEL_RUNNER")
    if value is not None:
        try:
            return "v2" if int(value) else "v1"
        except ValueError as err:
            raise InputError(
                f"VLLM_USE_V2_MODEL_RUNNER={value!r} is not an integer",
                source=opts.source,
                key="VLLM_USE_V2_MODEL_RUNNER",
                hint="vLLM reads it with int(): use 0 or 1",
            ) from err
    if spec is not None:
        if method in ("suffix", "custom_class"):
            return "v1"
        if spec.get("parallel_drafting") and method not in ("dflash", "dspark"):
            return "v1"
        if spec.get("use_heterogeneous_vocab"):
            return "v1"
    return "v2"
