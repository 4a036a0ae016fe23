"""Compose's interpolation of ``${VAR}`` and its forms in every value of a compose file."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kvconfig.errors import InputError
from kvconfig.load import yamlfile as _yaml

_VAR = re.compile(r"\$(\$|\{|[A-Za-z_][A-Za-z0-9_]*)")
_REQUIRED = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*):?\?[^}]*\}$")
"""A whole value that is only ``${NAME:?message}`` (or ``${NAME?message}``)."""


class Interpolation:
    """Compose's variable interpolation, from a fixed set of variables."""

    def __init__(self, variables: Mapping[str, str], source: str) -> None:
        self.variables = variables
        self.source = source
        self.unset: list[str] = []
        self.required: list[str] = []
        """Variables a container's environment requires (``${NAME:?}``) that are not set
        here: compose takes them from the shell it runs in, so their values are unknown."""

    def text(self, value: str, line: int | None, key: str) -> str:
        out: list[str] = []
        i = 0
        while i < len(value):
            c = value[i]
            if c != "$":
                out.append(c)
                i += 1
                continue
            nxt = value[i + 1 : i + 2]
            if nxt == "$":
                out.append("$")
                i += 2
                continue
            if nxt == "{":
                depth, j = 1, i + 2
                while j < len(value) and depth:
                    depth += {"{": 1, "}": -1}.get(value[j], 0)
                    j += 1
                if depth:
                    raise InputError(
                        f"unterminated ${{ in {value!r}",
                        source=self.source,
                        line=line,
                        key=key,
                        hint="close it with }, or write $$ for a literal $",
                    )
                out.append(self._expr(value[i + 2 : j - 1], line, key))
                i = j
                continue
            m = re.match(r"[A-Za-z_][A-Za-z0-9_]*", value[i + 1 :])
            if m:
                out.append(self._value(m.group(0), line, key))
                i += 1 + m.end()
                continue
            out.append(c)
            i += 1
        return "".join(out)

    def _value(self, name: str, line: int | None, key: str) -> str:
        if name in self.variables:
            return self.variables[name]
        if name not in self.unset:
            self.unset.append(name)
        return ""

    def _expr(self, expr: str, line: int | None, key: str) -> str:
        m = re.match(r"([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])(.*))?$", expr, re.S)
        if m is None:
            raise InputError(
                f"invalid interpolation ${{{expr}}}",
                source=self.source,
                line=line,
                key=key,
                hint="write ${NAME}, ${NAME:-default} or $$ for a literal $",
            )
        name, op, arg = m.group(1), m.group(2), m.group(3) or ""
        is_set = name in self.variables
        value = self.variables.get(name, "")
        if not op:
            return self._value(name, line, key)
        present = is_set and (bool(value) or not op.startswith(":"))
        kind = op[-1]
        if kind == "-":
            return value if present else self.text(arg, line, key)
        if kind == "+":
            return self.text(arg, line, key) if present else ""
        if not present:
            raise InputError(
                f"${{{name}}} is required: {arg or 'it is not set'}",
                source=self.source,
                line=line,
                key=key,
                hint=f"set {name} in the .env file beside the compose file, or pass "
                f"--env {name}=VALUE (the shell environment compose would use)",
            )
        return value

    def walk(self, node: Any, doc: _yaml.Document, path: tuple[str | int, ...]) -> Any:
        if isinstance(node, str) and path[2:3] == ("environment",) and len(path) == 4:
            key, eq, value = node.partition("=") if isinstance(path[3], int) else ("", "", node)
            m = _REQUIRED.match(value if eq or not isinstance(path[3], int) else "")
            if m and not self.variables.get(m.group(1)) and m.group(1) not in self.required:
                # the container's variable comes from the environment compose runs in
                self.required.append(m.group(1))
            if m and not self.variables.get(m.group(1)):
                return key or None
        if isinstance(node, str):
            return self.text(node, doc.line(*path), field_name(path))
        if isinstance(node, dict):
            return {k: self.walk(v, doc, (*path, k)) for k, v in node.items()}
        if isinstance(node, list):
            return [self.walk(v, doc, (*path, i)) for i, v in enumerate(node)]
        return node


def field_name(path: tuple[str | int, ...]) -> str:
    """``compose/vllm: command[0]`` for ``("services", "vllm", "command", 0)``."""
    if len(path) >= 2 and path[0] == "services":
        rest = ""
        for part in path[2:]:
            rest += f"[{part}]" if isinstance(part, int) else (f".{part}" if rest else str(part))
        return f"compose/{path[1]}: {rest}" if rest else f"compose/{path[1]}"
    return ".".join(str(p) for p in path)
