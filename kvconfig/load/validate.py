"""The one validation of a deployment document, and the one mapping of its errors.

A native kvconfig file, or any ``Deployment``-shaped mapping (the API), is validated
here: pydantic checks types and ranges against ``schemas.deployment``, the
``Deployment`` checks how its fields fit together and the names that depend on the vLLM
release, and the names only kvconfig's tables know (the platform, attention backends,
the environment) are checked last. The first problem becomes one ``InputError`` line with
the file, the line and the key; no pydantic error leaves this module.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from kvconfig._suggest import did_you_mean
from kvconfig.errors import DeploymentError, InputError, describe
from kvconfig.load.checks import check_backend, check_env
from kvconfig.load.yamlfile import Document
from kvconfig.schemas.deployment import Deployment


def deployment(data: Mapping[str, Any], doc: Document | None = None) -> Deployment:
    """A ``Deployment`` from its document (``source`` names the file); InputError otherwise.

    ``doc`` is the parsed YAML file the document came from, for line numbers.
    """
    from pydantic import ValidationError

    source = str(data.get("source", ""))
    try:
        dep: Deployment = _adapter().validate_python(data)
    except ValidationError as err:
        raise _schema_error(err, source, doc) from None
    except DeploymentError as err:
        raise located(err, source, doc) from None
    _check_names(dep, doc)
    return dep


@functools.cache
def _adapter() -> Any:
    """pydantic's validator of ``Deployment`` documents, built once (it imports pydantic)."""
    from pydantic import TypeAdapter

    return TypeAdapter(Deployment)


def json_schema() -> dict[str, Any]:
    """The JSON Schema of a ``Deployment`` document (the native file format)."""
    schema: dict[str, Any] = _adapter().json_schema(by_alias=True)
    return schema


def located(err: DeploymentError, source: str, doc: Document | None) -> InputError:
    """A ``Deployment``'s own complaint, at the line of the key it is about."""
    line = doc.line(*err.loc) if doc is not None else None
    return InputError(err.message, source=source, line=line, key=_key(err.loc), hint=err.hint)


def _key(loc: Sequence[str | int]) -> str:
    """``layers[0].count`` from ``("layers", 0, "count")``."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


#: Keys of a custom backend (``backends.NAME.KEY``) that have a new name.
RENAMED = {"kind": "serves"}

#: Pydantic's markers inside a location (union members, validators), not keys of the file.
_UNION_PARTS = ("constrained-int", "MultipleOf", "int")


def _schema_error(err: Any, source: str, doc: Document | None) -> InputError:
    """The first schema error of a document, as one line with its key and line."""
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
            why or f"expected a positive integer or {{multiple_of: n}}, got {describe(value)}",
            source=source,
            line=where(loc),
            key=_key(loc),
            hint="e.g. sizes: [16, 32, {multiple_of: 64}]",
        )
    error_type = first["type"]
    if error_type in ("extra_forbidden", "unexpected_keyword_argument"):
        renamed = RENAMED.get(str(loc[-1])) if len(loc) == 3 and loc[0] == "backends" else None
        return InputError(
            "unknown key",
            source=source,
            line=where(loc),
            key=_key(loc),
            hint=(f"renamed {renamed!r}" if renamed else None)
            or did_you_mean(str(loc[-1]), _fields_at(loc[:-1]))
            or "remove it",
        )
    message, hint = _explain(error_type, ctx, value, str(first["msg"]))
    return InputError(message, source=source, line=where(loc), key=_key(loc), hint=hint)


def _explain(error_type: str, ctx: Mapping[str, Any], value: Any, msg: str) -> tuple[str, str]:
    """Message and hint for one pydantic error type."""
    got = describe(value)
    if error_type == "missing":
        return "required key is missing", "add it"
    if error_type in ("int_type", "int_parsing", "int_from_float"):
        return f"expected an integer, got {got}", "write a whole number, unquoted"
    if error_type in ("greater_than_equal", "greater_than"):
        low = ctx.get("ge", ctx.get("gt"))
        return f"expected at least {low}, got {value!r}", f"use {low} or more"
    if error_type in ("less_than_equal", "less_than"):
        high = ctx.get("le", ctx.get("lt"))
        return f"expected at most {high}, got {value!r}", "use a smaller value"
    if error_type == "literal_error":
        expected = str(ctx.get("expected", ""))
        choices = [c.strip().strip("'") for c in expected.replace(" or ", ", ").split(",")]
        hint = did_you_mean(str(value), choices) if isinstance(value, str) else ""
        if len(choices) == 1:
            hint = f"use {expected}"
        return f"expected {expected}, got {got}", hint or "use one of those"
    if error_type in ("bool_type", "bool_parsing"):
        return f"expected true or false, got {got}", "write true or false, unquoted"
    if error_type == "string_type":
        return f"expected a string, got {got}", "quote the value"
    if error_type == "list_type":
        return f"expected a list, got {got}", "write it as a YAML list of '- item' lines"
    if error_type in (
        "dict_type",
        "model_type",
        "model_attributes_type",
        "dataclass_type",
        "dataclass_exact_type",
    ):
        return f"expected a mapping, got {got}", "write it as 'key: value' lines"
    if error_type == "too_short":
        return "needs at least one entry", "add one"
    return msg.removeprefix("Value error, ").rstrip("."), "fix the value"


def _fields_at(loc: Sequence[str | int]) -> list[str]:
    """The keys allowed in the mapping at ``loc`` of a native file."""
    import dataclasses

    from kvconfig.schemas.deployment import (
        AttentionSettings,
        CustomBackend,
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
    return ["$schema" if f.name == "schema_" else f.name for f in dataclasses.fields(model)]


def _check_names(dep: Deployment, doc: Document | None) -> None:
    """Names a native file may only use if kvconfig and vLLM know them: the platform,
    the attention backends (vLLM names, catalog class paths, or the file's own
    ``backends``) and the environment."""
    from kvconfig.load.platforms import parse_platform
    from kvconfig.mirror.catalog import load_catalog

    source = dep.source

    def line(*path: str | int) -> int | None:
        return doc.line(*path) if doc is not None else None

    if dep.platform is not None:
        try:
            parse_platform(dep.platform)
        except InputError as err:
            raise InputError(
                err.message, source=source, line=line("platform"), key="platform", hint=err.hint
            ) from None
    by_class = load_catalog(dep.vllm_version).by_class
    att = dep.attention
    named: list[tuple[tuple[str | int, ...], str | None]] = [
        (("attention", "backend"), att.backend),
        *((("attention", "backend_per_kind", k), v) for k, v in att.backend_per_kind.items()),
        (("draft_attention_backend",), dep.draft_attention_backend),
        *((("layers", i, "backend"), s.backend) for i, s in enumerate(dep.layers)),
    ]
    for path, name in named:
        if name is None or name in dep.backends or name in by_class:
            continue
        if name.strip().lower() == "auto":
            raise InputError(
                "'auto' is not a backend here",
                source=source,
                line=line(*path),
                key=_key(path),
                hint="leave it out, or write null, for vLLM's automatic choice",
            )
        check_backend(name, dep.vllm_version, source=source, line=line(*path), key=_key(path))
    check_env(dep.env, source, key="env", line_of={n: line("env", n) for n in dep.env})
