"""The Kthena CLI's manifest templates (volcano-sh/kthena ``cli/kthena/helm/templates``):
``kthena create manifest --template NAME`` renders one with Helm's template engine
(``cli/kthena/cmd/create.go``, ``renderTemplate``: ``engine.Engine.Render`` of a chart
holding only that file, the values under ``.Values``) and applies the result, a
``ModelBooster`` (``kvconfig.load.kubernetes.model_booster``).

The values are ``--values-file``, then ``--set``, then ``--name``; ``namespace`` is the
``--namespace`` flag's, ``default``, when none gives it (``loadTemplateValues``). A file
read here is rendered with those defaults: what ``kthena create manifest --template NAME``
applies. The templates use a small part of Go's template language, and only that part is
read: ``{{ .Values.KEY | default VALUE | quote }}`` pipelines of ``.Values`` fields and
literals through sprig's ``default`` (the value when the field is empty: nil, ``""``,
``0``, ``false``) and ``quote`` (Go's ``%q`` of the value; nothing for nil), and ``{{ if
PIPELINE }} ... {{ else }} ... {{ end }}``; ``{{-`` and ``-}}`` trim the blanks beside
them (Go's ``text/template``). A missing field prints nothing (Helm's engine). A file with
any other action is no CLI template: it stays an unrendered Helm chart template. Line
numbers in messages are the rendered text's.
"""

from __future__ import annotations

import json
import re
from typing import Any

from kvconfig.errors import NotCliTemplate

_ACTION = re.compile(r"\{\{(-\s)?\s*(.*?)\s*(\s-)?\}\}", re.DOTALL)
_TERM = re.compile(
    r'\.Values((?:\.[A-Za-z_]\w*)+)|"((?:[^"\\]|\\.)*)"|(-?\d+(?:\.\d+)?)|(true|false)'
)
_KIND = re.compile(r"^kind:\s*ModelBooster\s*$", re.MULTILINE)
_API = re.compile(r"^apiVersion:\s*workload\.serving\.volcano\.sh/", re.MULTILINE)

VALUES: dict[str, Any] = {"namespace": "default"}
"""The values the CLI renders with when the user gives none (``--namespace`` default)."""


def rendered(text: str, values: dict[str, Any] | None = None) -> str | None:
    """``text`` rendered as ``kthena create manifest`` renders it, or None when it is not
    a Kthena CLI template (not a ModelBooster, or an action outside that part)."""
    if not _KIND.search(text) or not _API.search(text):
        return None
    try:
        return _render(text, VALUES if values is None else values)
    except NotCliTemplate:
        return None


def _render(text: str, values: dict[str, Any]) -> str:
    out: list[str] = []
    stack: list[tuple[bool, bool]] = []  # (the branch's condition held, the enclosing is live)
    live = True
    at = 0
    for m in _ACTION.finditer(text):
        before = text[at : m.start()]
        if m.group(1):
            before = before.rstrip(" \t\r\n")
        if live:
            out.append(before)
        at = m.end()
        if m.group(3):
            rest = text[at:]
            at += len(rest) - len(rest.lstrip(" \t\r\n"))
        action = m.group(2)
        word = action.split(None, 1)[0] if action else ""
        if word == "if":
            held = _truthy(_pipeline(action[2:], values))
            stack.append((held, live))
            live = live and held
        elif word == "else" and action == "else" and stack:
            held, outer = stack[-1]
            stack[-1] = (not held, outer)
            live = outer and not held
        elif word == "end" and action == "end" and stack:
            live = stack.pop()[1]
        elif word in ("if", "else", "end", "range", "with", "define", "template", "block"):
            raise NotCliTemplate
        else:
            value = _pipeline(action, values)
            if live:
                out.append(_printed(value))
    if stack:
        raise NotCliTemplate
    if live:
        out.append(text[at:])
    return "".join(out)


def _pipeline(text: str, values: dict[str, Any]) -> Any:
    stages = [s.strip() for s in text.split("|")]
    value = _term(stages[0], values)
    for stage in stages[1:]:
        name, _, argument = stage.partition(" ")
        if name == "quote" and not argument:
            value = None if value is None else json.dumps(_printed(value), ensure_ascii=False)
        elif name == "default" and argument:
            given = _term(argument.strip(), values)
            value = given if not _truthy(value) else value
        else:
            raise NotCliTemplate
    return value


def _term(text: str, values: dict[str, Any]) -> Any:
    m = _TERM.fullmatch(text)
    if m is None:
        raise NotCliTemplate
    if m.group(1):
        node: Any = values
        for key in m.group(1)[1:].split("."):
            node = node.get(key) if isinstance(node, dict) else None
        return node
    if m.group(2) is not None:
        try:
            return json.loads('"' + m.group(2) + '"')
        except ValueError:  # an escape Go knows and JSON does not: not read here
            raise NotCliTemplate from None
    if m.group(3):
        number = m.group(3)
        return float(number) if "." in number else int(number)
    return m.group(4) == "true"


def _truthy(value: Any) -> bool:
    """Go's template truth (and sprig's ``empty`` negated): nil, false, 0, "" and empty
    collections are false."""
    return value not in (None, False, 0, "") and value not in ({}, [])


def _printed(value: Any) -> str:
    """What the template prints for ``value`` (a missing field: nothing)."""
    if value is None:
        return ""
    if value is True or value is False:
        return "true" if value else "false"
    return str(value)
