"""A chart's values as its Go templates see them: printed values, truth, lines of keys."""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from kvconfig.errors import InputError
from kvconfig.load import yamlfile as _yaml


def _go(value: Any) -> str:
    """A value as Go's template ``quote`` and ``printf "%v"`` print it. Helm reads a
    values file's numbers as float64 (YAML to JSON), and Go prints a float64 in its
    shortest form, with an exponent from 10^6 up or below 10^-4: 999999 prints as
    ``999999``, 1000000 as ``1e+06`` (helm/helm#12195, #1707)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return go_float(float(value))
    if isinstance(value, list):
        return "[" + " ".join(_go(v) for v in value) + "]"
    if isinstance(value, dict):  # Go prints a map's keys sorted
        return "map[" + " ".join(f"{k}:{_go(value[k])}" for k in sorted(value, key=str)) + "]"
    return str(value)


def go_float(x: float) -> str:
    """Go's ``strconv.FormatFloat(x, 'g', -1, 64)``, what ``%v`` prints: the shortest
    digits that read back as ``x``; ``%e`` form when the exponent is below -4 or 6 and up
    (``eprec = 6`` for the shortest form, strconv/ftoa.go)."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "+Inf" if x > 0 else "-Inf"
    sign = "-" if str(x).startswith("-") else ""
    if x == 0:
        return sign + "0"
    # Python's repr is the shortest round-trip form too: its digits, and where the
    # decimal point falls among them
    shortest = Decimal(repr(abs(x))).normalize().as_tuple()
    digits = "".join(map(str, shortest.digits))
    point = len(digits) + int(shortest.exponent)
    exp = point - 1
    if exp < -4 or exp >= 6:
        head = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{head}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return f"{sign}{digits[:point]}.{digits[point:]}"


def go_int(value: Any) -> int:
    """Go templates' ``int`` (sprig's ``toInt``): a number truncated, a numeric string
    parsed, else 0."""
    try:
        if isinstance(value, (bool, int, float)):
            return int(value)
        return int(float(str(value)))
    except (ValueError, OverflowError):  # not a number, NaN, infinite
        return 0


def coalesce(chart: Any, given: Any) -> Any:
    """Helm's merge of a values file over the chart's values: mappings key by key, a
    null removes the chart's key, anything else replaces it (no values: the chart's)."""
    if given is None:
        return chart
    if not isinstance(chart, dict) or not isinstance(given, dict):
        return given
    out = dict(chart)
    for key, value in given.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = coalesce(chart.get(key), value)
    return out


def values_at(values: Any, *path: str) -> Any:
    """The value at ``path`` of nested mappings (``.Values.a.b``), None where one is
    missing or no mapping."""
    node = values
    for key in path:
        node = node.get(key) if isinstance(node, dict) else None
    return node


def _truthy(value: Any) -> bool:
    """Go templates' truth: false, 0, nil and empty strings, lists and maps are false."""
    return bool(value)


class _Values:
    """A values file with the line of each key."""

    def __init__(self, doc: _yaml.Document) -> None:
        self.doc = doc

    def err(self, message: str, path: tuple[str | int, ...], key: str, hint: str) -> InputError:
        return InputError(
            message, source=self.doc.source, line=self.doc.line(*path), key=key, hint=hint
        )


class _ValuesShim:
    """A synthetic pod spec whose lines are those of a values file entry."""

    def __init__(
        self,
        doc: _yaml.Document,
        path: tuple[str | int, ...],
        pod_spec: dict[str, Any],
        given: Mapping[str, str] | None = None,
    ) -> None:
        self.doc = doc
        self.path = path
        self.data = pod_spec
        self.source = doc.source
        self.given = dict(given or {})

    def line(self, *path: str | int) -> int | None:
        return self.doc.line(*self.path)

    def err(self, message: str, path: Any, key: str, hint: str) -> InputError:
        return InputError(message, source=self.source, line=self.line(), key=key, hint=hint)
