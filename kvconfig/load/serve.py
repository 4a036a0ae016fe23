"""``vllm serve`` configurations (YAML files and pasted commands) as deployments.

A ``vllm serve --config FILE`` YAML holds the command's options as keys. Both
forms become a list of options, checked against the options vLLM's ``serve``
parser knows (shipped as data per vLLM version), then turned into the
``Deployment`` document: the target's layers from its ``config.json``, the
drafter's from its own, and the settings that change the plan.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kvconfig._suggest import did_you_mean
from kvconfig.derive import architectures as _hf
from kvconfig.errors import InputError, UnsupportedArchitecture
from kvconfig.load import yamlfile as _yaml
from kvconfig.mirror import versions

#: Environment variables that change the plan (others are accepted and ignored).
PLAN_ENV = (
    "VLLM_USE_V2_MODEL_RUNNER",
    "VLLM_BATCH_INVARIANT",
    "VLLM_KV_CACHE_LAYOUT",
)

#: Flags that store the opposite of their name into vLLM's option (argparse store_false).
NEGATING_FLAGS = frozenset({"disable-prefix-caching", "enable-hybrid-kv-cache-manager"})

#: Accepted values of the plan-changing environment variables, as vLLM reads them
#: (``vllm/envs.py``): the two flags go through ``int()``; the layout through
#: ``env_with_choices``. None: any integer.
ENV_CHOICES: dict[str, tuple[str, ...] | None] = {
    "VLLM_USE_V2_MODEL_RUNNER": None,
    "VLLM_BATCH_INVARIANT": None,
    "VLLM_KV_CACHE_LAYOUT": ("LBNHC", "LBHNC", "LHBNC", "NHD", "HND", "BLHNC", "BLNHC", "BHLNC"),
}

#: ``AttentionBackendEnum`` names vLLM parses that kvconfig cannot plan for, and why.
VLLM_ONLY_BACKENDS = {
    "CUSTOM": (
        "CUSTOM selects an out-of-tree backend registered by a plugin; kvconfig cannot see it",
        "describe the layers in a native kvconfig file, with the backend's sizes under 'backends'",
    ),
    "TORCH_SDPA": (
        "TORCH_SDPA serves only vision encoders in vLLM",
        "choose a decoder attention backend, e.g. FLASH_ATTN or FLASHINFER",
    ),
}

MAX_LAYERS = 10_000
"""Most attention layers kvconfig plans for in one deployment (real models have a few hundred)."""

#: Options whose value is a JSON object (or a YAML mapping in a config file).
JSON_OPTIONS = frozenset(
    {"speculative-config", "attention-config", "hf-overrides", "compilation-config"}
)


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
            message,
            source=self.source,
            line=self.lines.get(key.split(".", maxsplit=1)[0]),
            key=key,
            hint=hint,
        )


def _canonical(name: str) -> str:
    """vLLM's normalisation: underscores become dashes before the first dot."""
    head, dot, rest = name.partition(".")
    return head.replace("_", "-") + dot + rest


def _option(opts: Options, raw_key: str, value: Any, line: int | None, version: str) -> None:
    known = versions.facts(version).serve_options
    key = _canonical(str(raw_key).removeprefix("--"))
    head, _, nested = key.partition(".")
    spec = known.get(f"--{head}")
    if spec is None and head.startswith("no-") and f"--{head[3:]}" in known:
        spec, head, value = known[f"--{head[3:]}"], head[3:], False
    if head in NEGATING_FLAGS and isinstance(value, bool):
        value = not value
    if spec is None:
        dashes = "--" if str(raw_key).startswith("--") else ""
        names = [dashes + k.removeprefix("--") for k in known if k.startswith("--")]
        raise InputError(
            f"unknown vLLM {version} option {raw_key!r}",
            source=opts.source,
            line=line,
            key=str(raw_key),
            hint=did_you_mean(dashes + head, names) or "see 'vllm serve --help'",
        )
    dest = str(spec["dest"]).replace("_", "-")
    opts.lines.setdefault(dest, line)
    if nested:
        if dest not in JSON_OPTIONS:
            raise InputError(
                f"{head!r} takes no sub-keys",
                source=opts.source,
                line=line,
                key=key,
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
        first = opts.lines.get(dest)
        again = (
            f"set again after line {first}" if first is not None and first != line else "set twice"
        )
        raise InputError(again, source=opts.source, line=line, key=head, hint="keep one of them")
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
        what = "empty" if doc.data is None else _describe(doc.data)
        hint = "write 'option: value' lines, e.g. 'model: ./qwen3-8b'"
        if isinstance(doc.data, str) and doc.data.lstrip().startswith("vllm serve"):
            hint = "to check a command, paste it after '--': kvconfig lint -- vllm serve ..."
        raise InputError(
            f"the file is {what}, not a mapping of vllm serve options",
            source=doc.source,
            line=1,
            hint=hint,
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
            raise InputError(
                f"cannot split the command: {err}",
                source="<command>",
                hint="check the quotes in the pasted command",
            ) from None
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
    elif (
        len(tokens) >= 3
        and tokens[1] == "-m"
        and tokens[2]
        in (
            "vllm.entrypoints.openai.api_server",
            "vllm.entrypoints.cli.main",
        )
    ):
        tokens = tokens[3:] if tokens[2].endswith("api_server") else tokens[4:]
    else:
        raise InputError(
            "expected a 'vllm serve ...' command",
            source="<command>",
            hint="paste it after '--': kvconfig lint --platform h200 -- vllm serve MODEL ...",
        )
    known = versions.facts(version).serve_options
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
                f"unexpected argument {tok!r} after the model",
                source="<command>",
                hint="vllm serve takes one model; options start with --",
            )
        name, eq, inline = tok.partition("=")
        if name == "--config":
            value = inline if eq else (tokens[i + 1] if i + 1 < len(tokens) else "")
            i += 1 if eq else 2
            if not value or value.startswith("--"):
                raise InputError(
                    "needs a file",
                    source="<command>",
                    key="--config",
                    hint="e.g. --config serve.yaml",
                )
            doc = _yaml.load((cwd / value), value)
            nested = options_from_yaml(doc, version)
            for k, v in nested.values.items():
                opts.values.setdefault(k, v)
                opts.lines.setdefault(k, None)
            opts.base = nested.base
            continue
        head = (
            _canonical(name.removeprefix("--")).partition(".")[0] if name.startswith("--") else name
        )
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
                raise InputError(
                    "needs a value", source="<command>", key=name, hint=f"e.g. {name} VALUE"
                )
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
                f"invalid JSON: {err.msg} at column {err.colno}",
                "pass one JSON object, in single quotes"
                if opts.source == "<command>"
                else "write it as a YAML mapping, or as one valid JSON object in quotes",
            ) from None
        except (RecursionError, ValueError) as err:
            raise opts.err(name, f"invalid JSON: {err}", "write it as a YAML mapping") from None
    if not isinstance(value, dict):
        raise opts.err(
            name,
            f"expected a mapping of keys, got {_describe(value)}",
            f"write it as a YAML mapping under '{name}:', or as a JSON object",
        )
    return value


def _describe(value: Any) -> str:
    """``the list [1, 2]``: a value and its type, shortened, for error messages."""
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    kinds = {int: "integer", float: "number", str: "string", list: "list", dict: "mapping"}
    text = repr(value)
    if len(text) > 40:
        text = text[:37] + "..."
    return f"the {kinds.get(type(value), type(value).__name__)} {text}"


def _int_option(opts: Options, name: str, low: int = 1, high: int = 1 << 20) -> int | None:
    value = opts.values.get(name)
    if value is None:
        return None
    expected = f"expected an integer from {low} to {high}"
    example = {"block-size": "e.g. 16, 64 or 128", "tensor-parallel-size": "e.g. 1, 2, 4 or 8"}
    hint = example.get(name, f"e.g. {low}")
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            raise opts.err(name, f"{expected}, got {_describe(value)}", hint) from None
    if isinstance(value, bool) or not isinstance(value, int):
        raise opts.err(name, f"{expected}, got {_describe(value)}", hint)
    if not low <= value <= high:
        raise opts.err(name, f"{expected}, got {value}", hint)
    return value


def _check_keys(opts: Options, name: str, given: Mapping[str, Any], known: Sequence[str]) -> None:
    for key in given:
        if key not in known:
            raise opts.err(
                f"{name}.{key}",
                "unknown key",
                did_you_mean(str(key), known) or f"see vLLM's {name} fields",
            )


def _backend_name(opts: Options, key: str, value: Any, version: str) -> str | None:
    """vLLM's parsing of a backend option: ``auto`` is None, other names its enum, upper-cased."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise opts.err(
            key, f"expected an attention backend name, got {_describe(value)}", "e.g. FLASHINFER"
        )
    if value.strip().lower() == "auto":
        return None
    name = value.strip().upper()
    check_backend(
        name,
        version,
        source=opts.source,
        line=opts.lines.get(key.split(".", maxsplit=1)[0]),
        key=key,
    )
    return name


def _same_first_word(word: str, choices: Sequence[str]) -> str:
    """``did you mean`` among the choices that start like ``word`` (sliding_attention ->
    sliding_window), else among all of them."""
    import difflib

    head = word.lower().split("_")[0]
    pool = [c for c in choices if c.split("_")[0] == head]
    hits = difflib.get_close_matches(word.lower(), pool, n=1, cutoff=0.0) if pool else []
    return f"did you mean {hits[0]!r}?" if hits else did_you_mean(word, choices)


def _backend_key(name: str) -> str:
    """Compare backend names the way people misspell them: ATTENTION for ATTN, any case."""
    return name.upper().replace("-", "_").replace("ATTENTION", "ATTN")


def check_backend(name: str, version: str, *, source: str, line: int | None, key: str) -> None:
    """InputError unless ``name`` is one of vLLM's ``AttentionBackendEnum`` names."""
    from kvconfig._suggest import closest
    from kvconfig.mirror.catalog import load_catalog

    names = list(load_catalog(version).registry)
    if name.upper() in names:
        return
    if name.upper() in VLLM_ONLY_BACKENDS:
        raise InputError(
            VLLM_ONLY_BACKENDS[name.upper()][0],
            source=source,
            line=line,
            key=key,
            hint=VLLM_ONLY_BACKENDS[name.upper()][1],
        )
    # vLLM shortens ATTENTION to ATTN: TRITON means TRITON_ATTN, FLASH_ATTENTION FLASH_ATTN
    short = _backend_key(name).removesuffix("_ATTN") + "_ATTN"
    hit = short if short in names else closest(name, names, key=_backend_key)
    raise InputError(
        f"unknown attention backend {name!r} for vLLM {version}",
        source=source,
        line=line,
        key=key,
        hint=f"did you mean {hit!r}?" if hit else "run 'kvconfig catalog' for the list",
    )


def check_env(
    env: Mapping[str, str],
    source: str,
    key: str = "--env",
    line_of: Mapping[str, int | None] | None = None,
) -> None:
    """InputError for a plan-changing variable vLLM would reject at start-up (``vllm/envs.py``).

    ``key`` names where the variable was set: ``--env``; ``env`` in a native file, where
    ``line_of`` gives each variable's line; empty for a pasted command's prefix.
    """
    for name, choices in ENV_CHOICES.items():
        value = env.get(name)
        if value is None:
            continue
        line = (line_of or {}).get(name)
        where = f"{key}.{name}" if key == "env" else key
        if choices is None:
            try:
                int(value)
            except ValueError:
                raise InputError(
                    f"{name}={value!r} is not an integer; vLLM reads it with int() and fails",
                    source=source,
                    line=line,
                    key=where,
                    hint="set it to 0 or 1",
                ) from None
        elif value not in choices:
            raise InputError(
                f"{name}={value!r} is not one of vLLM's layouts",
                source=source,
                line=line,
                key=where,
                hint=did_you_mean(value, choices, key=str) or f"use one of {', '.join(choices)}",
            )


def _short(path: Path) -> Path:
    """``path`` relative to the working folder when it lies below it (for messages)."""
    path = Path(os.path.normpath(path))
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


def _model_path(opts: Options, key: str, value: Any) -> Path:
    if not isinstance(value, str) or not value.strip():
        raise opts.err(
            key, f"expected the model's folder, got {_describe(value)}", "e.g. model: ./qwen3-8b"
        )
    path = Path(os.path.expanduser(value))
    if not path.is_absolute():
        path = opts.base / path
    if path.is_file() and path.name != "config.json":
        raise opts.err(
            key,
            f"{value!r} is a file, not a model folder",
            "point it at the folder that holds the model's config.json",
        )
    if path.exists():
        return _short(path)
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
    kv_dtype = opts.values.get("kv-cache-dtype", "auto")
    if not isinstance(kv_dtype, str) or kv_dtype not in f.kv_cache_dtypes:
        raise opts.err(
            "kv-cache-dtype",
            f"unknown KV-cache dtype {kv_dtype!r} for vLLM {version}",
            did_you_mean(str(kv_dtype), f.kv_cache_dtypes) or "e.g. auto, fp8",
        )
    tp = _int_option(opts, "tensor-parallel-size", high=1024) or 1
    block_size = _int_option(opts, "block-size", high=1 << 16)

    attention = _json_option(opts, "attention-config") or {}
    _check_keys(opts, "attention-config", attention, f.attention_config_keys)
    cli_backend = _backend_name(
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
            f"expected a mapping of layer kind to backend, got {_describe(per_kind)}",
            "e.g. {sliding_window: FLASH_ATTN}",
        )
    for kind in per_kind:
        if kind not in f.spec_kinds:
            raise opts.err(
                f"attention-config.backend_per_kind.{kind}",
                f"unknown KV-cache group kind {kind!r}",
                _same_first_word(str(kind), f.spec_kinds)
                or f"use one of {', '.join(f.spec_kinds)}",
            )
    trt = attention.get("use_trtllm_attention")
    if trt is not None and not isinstance(trt, bool):
        raise opts.err(
            "attention-config.use_trtllm_attention",
            f"expected true or false, got {_describe(trt)}",
            "write true or false, unquoted",
        )
    fa = attention.get("flash_attn_version")
    if fa is not None and (isinstance(fa, bool) or fa not in (2, 3, 4)):
        raise opts.err(
            "attention-config.flash_attn_version",
            f"expected 2, 3 or 4, got {_describe(fa)}",
            "leave it out to let vLLM choose",
        )

    hf_overrides = _json_option(opts, "hf-overrides") or {}
    model_key = "hf-config-path" if opts.values.get("hf-config-path") else "model"
    target_path = _model_path(opts, model_key, opts.values[model_key])
    target = _read_model(opts, target_path, model_key)
    if hf_overrides:
        target = _hf.Model(target.path, {**target.config, **hf_overrides})
    dtype = _hf.model_dtype(target.text, dtype_opt if isinstance(dtype_opt, str) else None)
    spec = _json_option(opts, "speculative-config")
    context = _derive_context(opts, spec, tp)
    declared = target.text.get("num_hidden_layers")
    if isinstance(declared, int) and declared > MAX_LAYERS:
        # refuse before deriving: some layouts build per-layer lists
        raise opts.err(
            model_key,
            f"the model has {declared} attention layers; kvconfig plans at most {MAX_LAYERS}",
            "check num_hidden_layers in its config.json",
        )
    derived = _checked(target, _hf.derive(target, dtype, known=known_archs, context=context))
    layers = [{**s, "role": "target"} for s in derived]
    n_target = _hf.pos_int(target.text, "num_hidden_layers", target.path)

    method = None
    draft_backend = None
    if spec is not None:
        _check_keys(opts, "speculative-config", spec, f.speculative_config_keys)
        if "tensor_parallel_size" in spec:
            raise opts.err(
                "speculative-config.tensor_parallel_size",
                "not a valid speculative-config key in vLLM",
                "use draft_tensor_parallel_size",
            )
        try:
            method, draft_layers = _drafter(
                opts, spec, dtype, n_target, f, target=target, context=context
            )
        except UnsupportedArchitecture as err:
            if err.source != opts.source:
                raise
            raise UnsupportedArchitecture(
                f"{target.architecture} with its {err.architecture}", opts.source
            ) from None
        draft_kv = spec.get("kv_cache_dtype")
        if draft_kv is not None and (
            not isinstance(draft_kv, str) or draft_kv not in f.kv_cache_dtypes
        ):
            raise opts.err(
                "speculative-config.kv_cache_dtype",
                f"unknown KV-cache dtype {draft_kv!r} for vLLM {version}",
                did_you_mean(str(draft_kv), f.kv_cache_dtypes) or "e.g. auto, fp8",
            )
        for s in draft_layers:
            s["role"] = "draft"
            if draft_kv is not None:
                s["kv_cache_dtype"] = draft_kv
        layers.extend(draft_layers)
        draft_backend = _backend_name(
            opts, "speculative-config.attention_backend", spec.get("attention_backend"), version
        )
    total = sum(int(s["count"]) for s in layers)
    if total > MAX_LAYERS:
        raise opts.err(
            model_key,
            f"the model has {total} attention layers; kvconfig plans at most {MAX_LAYERS}",
            "check num_hidden_layers in its config.json",
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
            "backend": cli_backend
            or _backend_name(opts, "attention-config.backend", attention.get("backend"), version),
            "backend_per_kind": {
                str(k): _backend_name(opts, f"attention-config.backend_per_kind.{k}", v, version)
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
    f: versions.Facts,
    *,
    target: _hf.Model,
    context: _hf.Context,
) -> tuple[str, list[dict[str, Any]]]:
    method = spec.get("method")
    model = spec.get("model")
    if method is not None and not isinstance(method, str):
        raise opts.err(
            "speculative-config.method",
            f"expected a method name, got {_describe(method)}",
            "e.g. eagle3, mtp, draft_model, ngram",
        )
    if method is not None and method not in f.speculative_methods:
        raise opts.err(
            "speculative-config.method",
            f"unknown speculative method {method!r} for vLLM {f.version}",
            did_you_mean(method, f.speculative_methods) or "e.g. eagle3, mtp, draft_model, ngram",
        )
    known = f.architectures
    if method in f.mtp_methods:
        method = "mtp"
    if method in ("ngram", "suffix", "ngram_gpu") or model in ("ngram", "[ngram]"):
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
            f"expected the drafter's folder, got {_describe(model)}",
            "e.g. model: ./eagle3-drafter",
        )
    if method == "mtp":
        if model is None:
            return method, _hf.derive_mtp(target, dtype, context)
        own = _read_model(
            opts, _model_path(opts, "speculative-config.model", model), "speculative-config.model"
        )
        return method, _hf.derive_mtp(own, dtype, context)
    if model is None:
        raise opts.err(
            "speculative-config.model",
            f"speculative method {method or 'draft_model'!r} needs a draft model",
            "set speculative-config.model to the drafter's folder",
        )
    if method is None or method == "draft_model":
        low = model.lower()
        method = (
            "eagle"
            if "eagle-" in low
            else "eagle3"
            if "eagle3" in low
            else "dflash"
            if "dflash" in low
            else "dspark"
            if "dspark" in low
            else "draft_model"
        )
    key = "speculative-config.model"
    path = _model_path(opts, key, model)
    draft = _read_model(opts, path, key)
    if method in ("eagle", "eagle3"):
        layers = _checked(
            draft,
            _hf.derive(
                draft, dtype, first_index=first_index, draft=True, known=known, context=context
            ),
        )
    else:
        layers = _checked(
            draft, _hf.derive(draft, dtype, first_index=0, known=known, context=context)
        )
        for s in layers:
            s["name"] = "draft_model." + str(s["name"])
    return method, layers


#: Integer fields of a derived layer set, and the config.json key each comes from.
_DERIVED_INTS = {
    "count": "num_hidden_layers",
    "num_heads": "num_attention_heads",
    "num_kv_heads": "num_key_value_heads",
    "head_size": "head_dim",
    "head_size_v": "head_dim",
    "sliding_window": "sliding_window",
    "tokens_per_state": "num_hidden_layers",
}


def _checked(model: _hf.Model, sets: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The derived layer sets, refused with a line about config.json if a value is not a
    positive integer (a config.json can hold anything; vLLM would fail on it too)."""
    for item in sets:
        for field_name, config_key in _DERIVED_INTS.items():
            value = item.get(field_name)
            if value is None and field_name in ("sliding_window", "head_size_v"):
                continue
            if value is None and field_name == "tokens_per_state":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(
                    f"expected a positive integer, got {_describe(value)}",
                    source=model.path,
                    key=config_key,
                    hint="fix the config.json value",
                )
    return sets


def _read_model(opts: Options, path: Path, key: str) -> _hf.Model:
    """``_hf.read_model``, its errors located at the option that named the folder."""
    try:
        return _hf.read_model(path, opts.source, key)
    except InputError as err:
        raise err.located(opts.source, opts.lines.get(key.split(".", maxsplit=1)[0])) from None


def runner_from_env(env: Mapping[str, str], source: str) -> str:
    """``VLLM_USE_V2_MODEL_RUNNER`` as vLLM reads it (``int()``): v1 or v2."""
    value = env["VLLM_USE_V2_MODEL_RUNNER"]
    try:
        return "v2" if int(value) else "v1"
    except ValueError as err:
        raise InputError(
            f"VLLM_USE_V2_MODEL_RUNNER={value!r} is not an integer; vLLM reads it with int()",
            source=source,
            key="VLLM_USE_V2_MODEL_RUNNER",
            hint="use 0 or 1",
        ) from err


def _runner(
    opts: Options, env: Mapping[str, str], spec: Mapping[str, Any] | None, method: str | None
) -> str:
    if "VLLM_USE_V2_MODEL_RUNNER" in env:
        return runner_from_env(env, opts.source)
    if spec is not None:
        if method in ("suffix", "custom_class"):
            return "v1"
        if spec.get("parallel_drafting") and method not in ("dflash", "dspark"):
            return "v1"
        if spec.get("use_heterogeneous_vocab"):
            return "v1"
    return "v2"
