"""The ``vllm serve`` options whose value vLLM's parser reads as JSON, and the values it
refuses there (``SystemExit 2``), keyed by release.

vLLM (``vllm/engine/arg_utils.py``, ``_compute_kwargs``) parses a config-dataclass
option with ``TypeAdapter(cls).validate_json`` after expanding bare ``80m``-style numbers
(``_expand_json_human_readable_numbers``), a ``dict`` option with ``json.loads``, a
``dict | str`` option with ``json.loads`` when the text looks like ``{...}``; ``""`` and
``"None"`` are None for optional ones. The release's ``json_options.json`` (written by
``tools/json_options.py``) lists them with each dataclass's JSON schema. A release without
the file checks nothing here.

kvconfig refuses only what vLLM surely refuses: text that is not JSON, a dataclass value
that is not a JSON object, a key the dataclass does not have, a string outside a
``Literal``'s values, a JSON object or list where a scalar is expected (and the
reverse), and the ``__post_init__`` checks mirrored below. Anything else it leaves to
vLLM.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from typing import Any

from kvconfig.mirror import versions

_LOOKS_LIKE_OBJECT = re.compile(r"(?s)^\s*{.*}\s*$")
_QUOTED = re.compile(r'("(?:[^"\\]|\\.)*")')
_HUMAN = re.compile(r"\b\d+(?:\.\d+)?[kKmMgGtT]\b")


@functools.cache
def json_options(version: str) -> Mapping[str, Mapping[str, Any]]:
    """Destination (``kv_transfer_config``) -> ``{"kind", "class", "schema"}`` for
    ``version`` (empty when the release has no ``json_options.json``)."""
    path = versions.folder(versions.check(version)) / "json_options.json"
    if not path.is_file():
        return {}
    with path.open(encoding="utf-8") as f:
        rows: dict[str, dict[str, Any]] = json.load(f)["options"]
    return {str(row["dest"]): row for row in rows.values()}


def refusal(dest: str, text: str, version: str) -> str | None:
    """Why vLLM's parser refuses ``text`` as the value of the option stored in ``dest``
    (None: it does not, or kvconfig cannot tell)."""
    spec = json_options(version).get(dest)
    if spec is None or not isinstance(text, str):
        return None
    kind = spec["kind"]
    if kind != "json" and text in ("", "None"):
        return None
    if kind == "json-or-str" and not _LOOKS_LIKE_OBJECT.match(text):
        return None
    if kind == "dataclass":
        text = _expand_numbers(text)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        return f"invalid JSON: {err.msg} at column {err.colno}"
    except (RecursionError, ValueError) as err:
        return f"invalid JSON: {err}"
    if kind != "dataclass":
        return None
    if not isinstance(value, dict):
        return f"{spec.get('class', 'the config')} expects a JSON object, got {_kind(value)}"
    schema = spec.get("schema")
    if schema is not None:
        problem = _check(value, schema, schema.get("$defs", {}), dest)
        if problem:
            return problem
    return _post_init(str(spec.get("class", "")), value)


def known_keys(dest: str, text: str, version: str) -> tuple[str, list[str]] | None:
    """A config-dataclass value without the top-level keys ``version``'s dataclass does not
    have, and those keys: (JSON text, keys), when that is all ``refusal`` finds wrong with
    it, else None. For words written for another release, whose dataclass had them (vLLM
    0.10's ``KVTransferConfig.kv_parallel_size``): the keys the plan reads stay."""
    spec = json_options(version).get(dest)
    if spec is None or spec["kind"] != "dataclass" or not isinstance(spec.get("schema"), dict):
        return None
    schema = spec["schema"]
    try:
        value = json.loads(_expand_numbers(text))
    except (ValueError, RecursionError):
        return None
    props = schema.get("properties") or {}
    if not isinstance(value, dict) or schema.get("additionalProperties", True) is not False:
        return None
    unknown = [str(k) for k in value if k not in props]
    if not unknown:
        return None
    kept = json.dumps({k: v for k, v in value.items() if k in props})
    return None if refusal(dest, kept, version) else (kept, unknown)


def _expand_numbers(text: str) -> str:
    from kvconfig.mirror.argtypes import human_readable_int

    parts = _QUOTED.split(text)
    for i in range(0, len(parts), 2):
        parts[i] = _HUMAN.sub(lambda m: str(human_readable_int(m.group())), parts[i])
    return "".join(parts)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"


def _check(value: Any, schema: Mapping[str, Any], defs: Mapping[str, Any], where: str) -> str:
    """The first sure refusal of ``value`` under ``schema`` ("" when none)."""
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = defs.get(ref.removeprefix("#/$defs/"))
        if not isinstance(target, dict) or "enum" in target:
            return ""  # an Enum class may take its names too (its own validator)
        return _check(value, target, defs, where)
    branches = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(branches, list):
        problems = [_check(value, b, defs, where) for b in branches if isinstance(b, dict)]
        return problems[0] if problems and all(problems) else ""
    enum = schema.get("enum")
    if isinstance(enum, list) and isinstance(value, str) and value not in enum:
        shown = ", ".join(repr(e) for e in enum)
        return f"{where}: {value!r} is not one of {shown}"
    kind = schema.get("type")
    if kind == "object":
        if not isinstance(value, dict):
            return f"{where}: expected an object, got {_kind(value)}" if _sure(value) else ""
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            if key in props:
                problem = _check(item, props[key], defs, f"{where}.{key}")
            elif extra is False:
                from kvconfig._suggest import did_you_mean

                hint = did_you_mean(str(key), sorted(props))
                problem = f"{where}: unknown key {key!r}" + (f", {hint}" if hint else "")
            elif isinstance(extra, dict):
                problem = _check(item, extra, defs, f"{where}.{key}")
            else:
                problem = ""
            if problem:
                return problem
        return ""
    if kind == "array":
        return f"{where}: expected a list, got {_kind(value)}" if isinstance(value, dict) else ""
    if kind in ("string", "integer", "number", "boolean") and isinstance(value, (dict, list)):
        return f"{where}: expected a {kind}, got {_kind(value)}"
    if kind == "null" and value is not None:
        return f"{where}: expected null, got {_kind(value)}"
    return ""


def _sure(value: Any) -> bool:
    """Whether pydantic surely refuses ``value`` where an object is expected."""
    return value is None or isinstance(value, (bool, int, float, str, list))


_KV_ROLES = ("kv_producer", "kv_consumer", "kv_both")


def _post_init(cls: str, value: Mapping[str, Any]) -> str | None:
    """The refusals of a dataclass's ``__post_init__`` (vLLM 0.30-0.33
    ``vllm/config/kv_transfer.py``: a connector needs a role)."""
    connector, role = value.get("kv_connector"), value.get("kv_role")
    if cls == "KVTransferConfig" and connector is not None and role is None:
        return f"kv_role is required when kv_connector is set (one of {', '.join(_KV_ROLES)})"
    return None


__all__ = ["json_options", "refusal"]
