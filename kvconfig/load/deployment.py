"""Reading deployments: ``vllm serve`` YAML files, pasted commands and native kvconfig files.

A YAML file whose top level has ``kvconfig: 1`` is a native file, validated by
``schemas.deployment.Deployment``; any other YAML file is a ``vllm serve --config``
file. Both end as the same ``Deployment`` document, then a ``Setup``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kvconfig._suggest import did_you_mean
from kvconfig.errors import InputError
from kvconfig.load import serve as _serve
from kvconfig.load import yamlfile as _yaml
from kvconfig.load.platforms import PlatformId
from kvconfig.mirror import versions
from kvconfig.plan.setup import Setup


def is_native(doc: _yaml.Document) -> bool:
    """Whether a parsed YAML file is a native kvconfig deployment file."""
    return isinstance(doc.data, dict) and "kvconfig" in doc.data


def document(
    target: str | Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    vllm_version: str | None = None,
    hooks: str | None = None,
    cwd: Path | None = None,
) -> tuple[dict[str, Any], _yaml.Document | None]:
    """The ``Deployment`` document of a file path or a command (argv list).

    Returns the document and, for files, the parsed YAML (for line numbers).
    Native files are returned as written (not yet validated).
    """
    version = versions.check(vllm_version) if vllm_version else versions.DEFAULT
    extra_env = dict(env or {})
    if isinstance(target, str):
        path = Path(target)
        doc = _yaml.load(path, target)
        if is_native(doc):
            data = dict(doc.data)
            data["source"] = target
            if vllm_version is not None:
                data["vllm_version"] = vllm_version
            if hooks is not None:
                data["hooks"] = hooks
            if extra_env:
                data["env"] = {**(data.get("env") or {}), **extra_env}
                if "VLLM_USE_V2_MODEL_RUNNER" in extra_env:
                    # --env on the command line decides the runner, as it does for serve configs
                    data["runner"] = _serve.runner_from_env(extra_env, target)
            return data, doc
        opts = _serve.options_from_yaml(doc, version)
    else:
        opts = _serve.options_from_command(target, version, cwd or Path.cwd())
        doc = None
    data = _serve.to_document(opts, version, extra_env)
    if hooks is not None:
        data["hooks"] = hooks
    return data, doc


def validate_native(data: Mapping[str, Any], doc: _yaml.Document | None) -> dict[str, Any]:
    """Validate a native file with the schema; the first problem becomes one InputError line.

    Beyond the schema, names are checked where the file can say which line is wrong:
    the platform, attention backends (vLLM names, catalog class paths, or the file's own
    ``backends``), KV-cache dtypes, the vLLM version and the environment.
    """
    from pydantic import ValidationError

    from schemas.deployment import Deployment

    source = str(data.get("source", ""))
    try:
        model = Deployment.model_validate(data)
    except ValidationError as err:
        raise _native_error(err, source, doc) from None
    out = model.model_dump(mode="json", by_alias=True)
    _check_names(out, source, doc)
    return out


def _key(loc: Sequence[str | int]) -> str:
    """``layers[0].count`` from ``("layers", 0, "count")``."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


#: Pydantic's markers inside a location (union members, validators), not keys of the file.
_UNION_PARTS = ("constrained-int", "MultipleOf", "int")


def _native_error(err: Any, source: str, doc: _yaml.Document | None) -> InputError:
    """The first schema error of a native file, as one line with its key and line."""
    from kvconfig.errors import DeploymentError

    errors = err.errors()
    first = errors[0]
    # pydantic's own parts of a location: validator wrappers, and "[key]" for a bad dict key
    raw_loc = [p for p in first["loc"] if not str(p).startswith("function-") and p != "[key]"]
    cut = next((i for i, p in enumerate(raw_loc) if p in _UNION_PARTS and i > 0), None)
    loc: list[str | int] = list(raw_loc if cut is None else raw_loc[:cut])

    def where(path: Sequence[str | int]) -> int | None:
        return doc.line(*path) if doc is not None else None

    ctx = first.get("ctx") or {}
    cause = ctx.get("error")
    if isinstance(cause, DeploymentError):
        return InputError(
            cause.message,
            source=source,
            line=where(cause.loc),
            key=_key(cause.loc),
            hint=cause.hint,
        )
    value = first.get("input")
    if cut is not None:
        # a kernel size: an exact int or {multiple_of: n}; say why the MultipleOf failed if it did
        why = next(
            (
                str(e["ctx"]["error"])
                for e in errors
                if e["type"] == "value_error" and list(e["loc"][:cut]) == loc and e.get("ctx")
            ),
            None,
        )
        return InputError(
            why or f"expected a positive integer or {{multiple_of: n}}, got {_describe(value)}",
            source=source,
            line=where(loc),
            key=_key(loc),
            hint="e.g. sizes: [16, 32, {multiple_of: 64}]",
        )
    kind = first["type"]
    if kind == "extra_forbidden":
        return InputError(
            "unknown key",
            source=source,
            line=where(loc),
            key=_key(loc),
            hint=did_you_mean(str(loc[-1]), _fields_at(loc[:-1])) or "remove it",
        )
    message, hint = _explain(kind, ctx, value, str(first["msg"]))
    return InputError(message, source=source, line=where(loc), key=_key(loc), hint=hint)


def _describe(value: Any) -> str:
    from kvconfig.load.serve import _describe as describe

    return describe(value)


def _explain(kind: str, ctx: Mapping[str, Any], value: Any, msg: str) -> tuple[str, str]:
    """Message and hint for one pydantic error type."""
    got = _describe(value)
    if kind == "missing":
        return "required key is missing", "add it"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return f"expected an integer, got {got}", "write a whole number, unquoted"
    if kind in ("greater_than_equal", "greater_than"):
        low = ctx.get("ge", ctx.get("gt"))
        return f"expected at least {low}, got {value!r}", f"use {low} or more"
    if kind in ("less_than_equal", "less_than"):
        high = ctx.get("le", ctx.get("lt"))
        return f"expected at most {high}, got {value!r}", "use a smaller value"
    if kind == "literal_error":
        expected = str(ctx.get("expected", ""))
        choices = [c.strip().strip("'") for c in expected.replace(" or ", ", ").split(",")]
        hint = did_you_mean(str(value), choices) if isinstance(value, str) else ""
        if len(choices) == 1:
            hint = f"use {expected}"
        return f"expected {expected}, got {got}", hint or "use one of those"
    if kind in ("bool_type", "bool_parsing"):
        return f"expected true or false, got {got}", "write true or false, unquoted"
    if kind == "string_type":
        return f"expected a string, got {got}", "quote the value"
    if kind == "list_type":
        return f"expected a list, got {got}", "write it as a YAML list of '- item' lines"
    if kind in ("dict_type", "model_type", "model_attributes_type", "dataclass_type"):
        return f"expected a mapping, got {got}", "write it as 'key: value' lines"
    if kind == "too_short":
        return "needs at least one entry", "add one"
    return msg.removeprefix("Value error, ").rstrip("."), "fix the value"


def _fields_at(loc: Sequence[str | int]) -> list[str]:
    """The keys allowed in the mapping at ``loc`` of a native file."""
    from schemas.deployment import (
        AttentionSettings,
        CustomBackend,
        Deployment,
        GroupSettings,
        LayerSet,
    )

    model: Any = Deployment
    if loc[:1] == ["layers"]:
        model = LayerSet
    elif loc[:1] == ["attention"]:
        model = AttentionSettings
    elif loc[:1] == ["backends"]:
        model = CustomBackend
    elif loc[:1] == ["groups"]:
        model = GroupSettings
    return [(f.alias or n) for n, f in model.model_fields.items()]


def _check_names(out: Mapping[str, Any], source: str, doc: _yaml.Document | None) -> None:
    """Names a native file may only use if kvconfig and vLLM know them."""
    from kvconfig.load.platforms import parse_platform
    from kvconfig.load.serve import check_backend, check_env
    from kvconfig.mirror.catalog import load_catalog

    def line(*path: str | int) -> int | None:
        return doc.line(*path) if doc is not None else None

    version = versions.check(
        str(out["vllm_version"]), source=source, line=line("vllm_version"), key="vllm_version"
    )
    if out.get("platform") is not None:
        try:
            parse_platform(str(out["platform"]))
        except InputError as err:
            raise InputError(
                err.message, source=source, line=line("platform"), key="platform", hint=err.hint
            ) from None
    custom = set(out.get("backends") or {})
    by_class = load_catalog(version).by_class
    att = out.get("attention") or {}
    per_kind = att.get("backend_per_kind") or {}
    layers = list(enumerate(out["layers"]))
    named: list[tuple[tuple[str | int, ...], Any]] = [
        (("attention", "backend"), att.get("backend")),
        *((("attention", "backend_per_kind", k), v) for k, v in per_kind.items()),
        (("draft_attention_backend",), out.get("draft_attention_backend")),
        *((("layers", i, "backend"), s.get("backend")) for i, s in layers),
    ]
    for path, name in named:
        if name is None or name in custom or name in by_class:
            continue
        if str(name).strip().lower() == "auto":
            raise InputError(
                "'auto' is not a backend here",
                source=source,
                line=line(*path),
                key=_key(path),
                hint="leave it out, or write null, for vLLM's automatic choice",
            )
        check_backend(str(name), version, source=source, line=line(*path), key=_key(path))
    dtypes = versions.facts(version).kv_cache_dtypes
    for path, dtype in [
        (("kv_cache_dtype",), out.get("kv_cache_dtype")),
        *((("layers", i, "kv_cache_dtype"), s.get("kv_cache_dtype")) for i, s in layers),
    ]:
        if dtype is not None and dtype not in dtypes:
            raise InputError(
                f"unknown KV-cache dtype {dtype!r} for vLLM {version}",
                source=source,
                line=line(*path),
                key=_key(path),
                hint=did_you_mean(str(dtype), dtypes) or "e.g. auto, fp8",
            )
    env = out.get("env") or {}
    check_env(env, source, key="env", line_of={n: line("env", n) for n in env})


def load_setup(
    target: str | Sequence[str],
    platform: PlatformId | None,
    *,
    env: Mapping[str, str] | None = None,
    vllm_version: str | None = None,
    hooks: str | None = None,
    cwd: Path | None = None,
    trtllm_cubins: bool | None = None,
) -> Setup:
    """A deployment ready to resolve; raises InputError or UnsupportedArchitecture.

    ``trtllm_cubins=False`` says FlashInfer's TRTLLM cubins cannot be fetched where the
    engine runs (no ``flashinfer-cubin`` package and no network), which vLLM checks at
    start-up and which decides FlashInfer's large pages on SM10x.
    """
    data, doc = document(target, env=env, vllm_version=vllm_version, hooks=hooks, cwd=cwd)
    if trtllm_cubins is not None:
        data["trtllm_cubins"] = trtllm_cubins
    if doc is not None and is_native(doc):
        data = validate_native(data, doc)
    return Setup.from_dict(data, platform)


__all__ = ["document", "is_native", "load_setup", "validate_native"]
