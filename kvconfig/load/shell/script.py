"""A script run without running it: words expanded, assignments applied, simple commands kept."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kvconfig.errors import InputError
from kvconfig.load.shell.lexer import _NAME, _Lexer, _Op, _Part, _source_form, _Word

MAX_SCRIPT_BYTES = 256 * 1024
"""Longest script kvconfig reads (the launch scripts of real manifests are a few KiB)."""

MAX_EVAL_DEPTH = 8
"""Deepest nesting of ``eval`` kvconfig follows."""


@dataclass(frozen=True, slots=True)
class Command:
    """One simple command of a script, its words expanded."""

    words: tuple[str, ...]
    """The command's words after expansion (wrappers such as ``exec`` removed)."""
    env: Mapping[str, str | None]
    """The exported environment it runs with; None: the value is not known."""
    unknown: tuple[tuple[int, str], ...] = ()
    """(word index, what was unknown there: ``$SECRET``, ``$(...)``)."""
    line: int | None = None
    """Line in the file where the command starts, when known."""


_KEYWORDS_DROP = frozenset({"if", "then", "else", "elif", "do", "while", "until", "!", "{", "}"})
_KEYWORDS_END = frozenset({"fi", "done", "esac"})
_KEYWORDS_SKIP = frozenset({"for", "case", "select", "function"})
_WRAPPERS = frozenset({"exec", "nohup", "command", "time", "builtin"})
_PARAM = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*|[@*#?$!0-9-])(?:(:?[-=+?])(.*))?$", re.S)


class _Shell:
    def __init__(  # noqa: PLR0917 (the script's starting state)
        self,
        env: Mapping[str, str | None],
        args: Sequence[str],
        unknown_rest: bool,
        source: str,
        line0: int | None,
        key: str,
    ) -> None:
        self.vars: dict[str, str | None] = dict(env)
        self.exported: set[str] = set(env)
        self.args = list(args)
        self.unknown_rest = unknown_rest
        self.source = source
        self.line0 = line0
        self.key = key
        self.commands: list[Command] = []

    def lookup(self, name: str) -> tuple[bool, str | None]:
        """(is set, value); a set variable with value None is set to an unknown value."""
        if name.isdigit():
            n = int(name)
            if n == 0:
                return (bool(self.args), self.args[0] if self.args else None)
            return (n < len(self.args), self.args[n] if n < len(self.args) else None)
        if name in ("@", "*"):
            rest = self.args[1:]
            return (bool(rest), " ".join(rest))
        if name == "#":
            return (True, str(max(len(self.args) - 1, 0)))
        if name in "?$!-":
            return (True, None)
        if name in self.vars:
            return (True, self.vars[name])
        return (self.unknown_rest, None) if self.unknown_rest else (False, "")

    def param(self, body: str) -> tuple[str | None, str]:
        """The value of ``${body}`` (None: unknown) and what was unknown."""
        m = _PARAM.match(body)
        if not m:
            return None, "${" + body + "}"
        name, op, arg = m.group(1), m.group(2), m.group(3) or ""
        is_set, value = self.lookup(name)
        unknown_what = "$" + name
        if not op:
            if is_set and value is None:
                return None, unknown_what
            return (value or "") if is_set else "", ""
        null_counts = op.startswith(":")
        plain = op[-1]
        if is_set and value is None:
            return None, unknown_what
        present = is_set and (not null_counts or bool(value))
        if plain in "-=":
            if present:
                return value or "", ""
            default, unknown = self.expand_text(arg)
            if plain == "=" and name not in self.vars and _NAME.fullmatch(name):
                self.vars[name] = default
            return default, unknown
        if plain == "+":
            if not present:
                return "", ""
            return self.expand_text(arg)
        if not present:  # "?": the shell stops with the message
            return None, unknown_what
        return value or "", ""

    def expand_text(self, text: str) -> tuple[str | None, str]:
        """A default word of ``${NAME:-word}``, expanded as one field."""
        lexer = _Lexer(text, self.source, None, self.key)
        word = lexer._word()
        fields, unknown = self.expand_word(word, split=False)
        if unknown:
            return None, unknown[0]
        return (fields[0] if fields else ""), ""

    def expand_word(self, word: _Word, split: bool = True) -> tuple[list[str], list[str]]:
        """The fields of a word, and what in it was unknown (then one field, as written)."""
        fields: list[str] = []
        cur: str | None = None
        unknown: list[str] = []
        for part in word.parts:
            if part.kind == "lit":
                if part.quoted or part.text:
                    cur = (cur or "") + part.text
                continue
            if part.kind == "at":
                rest = self.args[1:]
                if rest:
                    cur = (cur or "") + rest[0]
                    for arg in rest[1:]:
                        fields.append(cur)
                        cur = arg
                continue
            if part.kind == "param":
                value, what = self.param(part.text)
            else:
                value, what = None, _source_form(part)
            if value is None:
                unknown.append(what or _source_form(part))
                continue
            if part.quoted or not split:
                cur = (cur or "") + value
                continue
            pieces = value.split()
            if value[:1].isspace() and cur is not None:
                fields.append(cur)
                cur = None
            for k, piece in enumerate(pieces):
                if k > 0 and cur is not None:
                    fields.append(cur)
                    cur = None
                cur = (cur or "") + piece
            if value[-1:].isspace() and pieces and cur is not None:
                fields.append(cur)
                cur = None
        if cur is not None:
            fields.append(cur)
        if unknown:
            return [word.raw()], unknown
        return fields, []

    def run(self, tokens: list[_Word | _Op], depth: int = 0) -> None:
        statement: list[_Word] = []
        for token in [*tokens, _Op(";", 0)]:
            if isinstance(token, _Word):
                statement.append(token)
                continue
            if statement:
                self.simple(statement, depth)
                statement = []

    def simple(self, words: list[_Word], depth: int) -> None:
        line = None if self.line0 is None else self.line0 + words[0].line - 1
        assigns: list[tuple[str, str | None]] = []
        rest = list(words)
        while rest:
            word0 = rest[0]
            first = word0.parts[0] if word0.parts else None
            if first is not None and first.kind == "lit" and not first.quoted:
                m = re.match(r"([A-Za-z_][A-Za-z0-9_]*)=", first.text)
                if m and len(rest) > 0:
                    value_word = _Word(
                        [_Part(first.text[m.end() :], False, "lit"), *word0.parts[1:]], word0.line
                    )
                    fields, unknown = self.expand_word(value_word, split=False)
                    assigns.append((m.group(1), None if unknown else "".join(fields)))
                    rest.pop(0)
                    continue
            break
        expanded: list[str] = []
        unknown_at: list[tuple[int, str]] = []
        for w in rest:
            fields, unknown = self.expand_word(w)
            for what in unknown:
                unknown_at.append((len(expanded), what))
            expanded.extend(fields)
        while expanded and expanded[0] in _KEYWORDS_DROP | _KEYWORDS_END:
            expanded.pop(0)
            unknown_at = [(i - 1, w) for i, w in unknown_at]
        if not expanded:
            for name, value in assigns:
                self.vars[name] = value
            return
        if expanded[0] in _KEYWORDS_SKIP:
            return
        local = dict(assigns)
        while expanded:
            head = expanded[0]
            if head in _WRAPPERS:
                expanded.pop(0)
                unknown_at = [(i - 1, w) for i, w in unknown_at]
                continue
            if head == "env":
                expanded.pop(0)
                unknown_at = [(i - 1, w) for i, w in unknown_at]
                while expanded and (expanded[0].startswith("-") or "=" in expanded[0]):
                    item = expanded.pop(0)
                    unknown_at = [(i - 1, w) for i, w in unknown_at]
                    if "=" in item and not item.startswith("-"):
                        name, _, value = item.partition("=")
                        local[name] = value
                    elif item in ("-u", "--unset") and expanded:
                        expanded.pop(0)
                        unknown_at = [(i - 1, w) for i, w in unknown_at]
                continue
            break
        if not expanded:
            return
        head = expanded[0]
        if head == "export":
            for k, item in enumerate(expanded[1:], start=1):
                if item.startswith("-"):
                    continue
                name, eq, value = item.partition("=")
                if eq:
                    known = not any(i == k for i, _ in unknown_at)
                    self.vars[name] = value if known else None
                self.exported.add(name)
            return
        if head == "unset":
            for name in expanded[1:]:
                self.vars.pop(name, None)
                self.exported.discard(name)
            return
        if head == "eval":
            if depth >= MAX_EVAL_DEPTH:
                return
            text = " ".join(expanded[1:])
            outer = self.line0
            self.line0 = line
            try:
                self.run(_Lexer(text, self.source, line, self.key).tokens(), depth + 1)
            finally:
                self.line0 = outer
            return
        env = {k: self.vars.get(k) for k in self.exported if k in self.vars}
        env.update(local)
        self.commands.append(
            Command(tuple(expanded), env, tuple((i, w) for i, w in unknown_at if i >= 0), line)
        )


def commands(
    script: str,
    env: Mapping[str, str | None] | None = None,
    args: Sequence[str] = (),
    *,
    unknown_rest: bool = False,
    source: str = "",
    line: int | None = None,
    key: str = "",
) -> list[Command]:
    """The simple commands of ``script`` in order, their words expanded.

    ``env`` is the environment the script starts with (None: a value kvconfig cannot
    know, e.g. from a Secret). ``args`` are ``$0 $1 ...`` (``sh -c SCRIPT ARG0 ARG1``).
    With ``unknown_rest`` (``envFrom`` is set) a variable not in ``env`` is unknown
    rather than unset. ``line`` is the file line of the script's first line, for error
    messages. Raises InputError for an unterminated quote or expansion.
    """
    if len(script) > MAX_SCRIPT_BYTES:
        raise InputError(
            f"the script is {len(script)} characters; kvconfig reads at most {MAX_SCRIPT_BYTES}",
            source=source,
            line=line,
            key=key,
            hint="keep the launch script short, or move it into the image",
        )
    shell = _Shell(env or {}, args, unknown_rest, source, line, key)
    shell.run(_Lexer(script, source, line, key).tokens())
    return shell.commands
