"""The simple commands of a ``sh -c`` / ``bash -c`` script, with their words expanded.

Operators keep vLLM's arguments in scripts like::

    export VLLM_USE_V2_MODEL_RUNNER=1 && \\
      exec vllm serve "$MODEL" --block-size ${BLOCK_SIZE:-128} 2>&1 | tee /tmp/vllm.log

This module splits such a script the way a POSIX shell would, without running it:
quotes (single, double, ``$'...'``), backslash escapes and line continuations,
comments, here-documents, the separators ``;`` ``&`` ``&&`` ``||`` ``|`` and newlines,
redirections (dropped), and the compound-command keywords (``if``/``then``/``do``...,
whose inner commands are kept). Words are expanded in order of the script:
``$NAME``, ``${NAME}``, ``${NAME:-word}`` and the other POSIX default forms, the
positional parameters (``$1``, ``"$@"``), and field splitting of unquoted expansions.
Assignments (``NAME=value``, ``export NAME=value``, ``env NAME=value cmd``) take effect
in the order written, whatever branch of an ``if`` they are in. ``eval`` re-reads its
words as a script.

What a reader cannot know stays unknown, never guessed: a variable whose value comes
from a Secret or ConfigMap, command substitution ``$(...)``, arithmetic. Such a word
keeps its text and the command lists what was unknown.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kvconfig.errors import InputError

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


# --------------------------------------------------------------------------- tokens


@dataclass
class _Part:
    text: str
    quoted: bool
    kind: str  # "lit", "param", "cmd", "arith", "at" ("$@" in double quotes)
    src: str = ""  # the expansion as written


@dataclass
class _Word:
    parts: list[_Part] = field(default_factory=list)
    line: int = 1

    def raw(self) -> str:
        return "".join(p.text if p.kind == "lit" else _source_form(p) for p in self.parts)


def _source_form(part: _Part) -> str:
    if part.src:
        return part.src
    if part.kind in {"param", "at"}:
        return "${" + part.text + "}"
    if part.kind == "cmd":
        return "$(" + part.text + ")"
    return "$((" + part.text + "))"


@dataclass
class _Op:
    text: str
    line: int


_OPERATORS = ("&&", "||", ";;", ";", "&", "|", "(", ")", "\n")
_WORD_ENDS = frozenset(" \t\r\n&|;()<>")
_REDIRECT = re.compile(r"(\d*)(<<<|<<-|<<|>>|>\||<>|<&|>&|&>>|&>|<|>)")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SPECIAL = "@*#?$!0123456789-"


class _Lexer:
    def __init__(self, text: str, source: str, line0: int | None, key: str) -> None:
        self.text = text
        self.i = 0
        self.line = 1
        self.source = source
        self.line0 = line0
        self.key = key
        self.heredocs: list[tuple[str, bool]] = []

    def err(self, message: str, line: int, hint: str) -> InputError:
        at = None if self.line0 is None else self.line0 + line - 1
        return InputError(message, source=self.source, line=at, key=self.key, hint=hint)

    def peek(self, n: int = 0) -> str:
        j = self.i + n
        return self.text[j] if j < len(self.text) else ""

    def tokens(self) -> list[_Word | _Op]:
        out: list[_Word | _Op] = []
        redirect_next = ""
        while self.i < len(self.text):
            c = self.text[self.i]
            if c == "\\" and self.peek(1) == "\n":
                self.i += 2
                self.line += 1
                continue
            if c in " \t\r":
                self.i += 1
                continue
            if c == "#":
                while self.i < len(self.text) and self.text[self.i] != "\n":
                    self.i += 1
                continue
            if c == "\n":
                out.append(_Op("\n", self.line))
                self.i += 1
                self.line += 1
                if self.heredocs:
                    self._skip_heredocs()
                continue
            m = _REDIRECT.match(self.text, self.i)
            if m and (m.group(1) == "" or self.i == 0 or self.text[self.i - 1] in " \t\n;&|("):
                op = m.group(2)
                self.i = m.end()
                if op in (">&", "<&") and re.match(r"\d+|-", self.text[self.i :]):
                    # 2>&1: the target is a descriptor, not a file
                    dm = re.match(r"\d+|-", self.text[self.i :])
                    assert dm is not None
                    self.i += dm.end()
                    continue
                redirect_next = op
                continue
            op_match = next((o for o in _OPERATORS if self.text.startswith(o, self.i)), None)
            if op_match is not None:
                out.append(_Op(op_match, self.line))
                self.i += len(op_match)
                if op_match == "\n":
                    self.line += 1
                continue
            word = self._word()
            if redirect_next:
                if redirect_next in ("<<", "<<-"):
                    self.heredocs.append((word.raw().strip("'\""), redirect_next == "<<-"))
                redirect_next = ""
                continue
            out.append(word)
        if self.heredocs:
            raise self.err(
                f"the here-document {self.heredocs[0][0]!r} never ends",
                self.line,
                "end it with a line holding only its delimiter",
            )
        return out

    def _skip_heredocs(self) -> None:
        while self.heredocs:
            delimiter, strip_tabs = self.heredocs.pop(0)
            while True:
                if self.i >= len(self.text):
                    self.heredocs.insert(0, (delimiter, strip_tabs))
                    return
                end = self.text.find("\n", self.i)
                end = len(self.text) if end < 0 else end
                row = self.text[self.i : end]
                self.i = end + 1
                self.line += 1
                if (row.lstrip("\t") if strip_tabs else row) == delimiter:
                    break

    def _word(self) -> _Word:
        word = _Word(line=self.line)
        lit: list[str] = []

        def flush(quoted: bool = False) -> None:
            if lit:
                word.parts.append(_Part("".join(lit), quoted, "lit"))
                lit.clear()

        while self.i < len(self.text):
            c = self.text[self.i]
            if c in _WORD_ENDS:
                break
            if c == "\\":
                nxt = self.peek(1)
                if nxt == "\n":
                    self.i += 2
                    self.line += 1
                    continue
                flush()
                word.parts.append(_Part(nxt, True, "lit"))
                self.i += 2
                continue
            if c == "'":
                flush()
                start_line = self.line
                end = self.text.find("'", self.i + 1)
                if end < 0:
                    raise self.err(
                        f"unterminated quote: the ' opened on line {start_line} of the "
                        "script never closes",
                        start_line,
                        "close the quote",
                    )
                body = self.text[self.i + 1 : end]
                self.line += body.count("\n")
                word.parts.append(_Part(body, True, "lit"))
                self.i = end + 1
                continue
            if c == "$" and self.peek(1) == "'":
                flush()
                self.i += 2
                word.parts.append(_Part(self._ansi_c(), True, "lit"))
                continue
            if c == '"':
                flush()
                self._double_quoted(word)
                continue
            if c == "$":
                part = self._dollar(quoted=False)
                if part is not None:
                    flush()
                    word.parts.append(part)
                    continue
            if c == "`":
                flush()
                word.parts.append(_Part(self._backtick(), False, "cmd"))
                continue
            lit.append(c)
            self.i += 1
        flush()
        return word

    def _ansi_c(self) -> str:
        out: list[str] = []
        escapes = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "a": "\a"}
        start_line = self.line
        while self.i < len(self.text):
            c = self.text[self.i]
            if c == "'":
                self.i += 1
                return "".join(out)
            if c == "\\" and self.peek(1):
                out.append(escapes.get(self.peek(1), "\\" + self.peek(1)))
                self.i += 2
                continue
            if c == "\n":
                self.line += 1
            out.append(c)
            self.i += 1
        raise self.err(
            f"unterminated quote: the $' opened on line {start_line} of the script never closes",
            start_line,
            "close the quote",
        )

    def _double_quoted(self, word: _Word) -> None:
        start_line = self.line
        self.i += 1
        lit: list[str] = []

        def flush() -> None:
            if lit:
                word.parts.append(_Part("".join(lit), True, "lit"))
                lit.clear()

        while self.i < len(self.text):
            c = self.text[self.i]
            if c == '"':
                self.i += 1
                flush()
                if not word.parts or all(p.text == "" for p in word.parts):
                    word.parts.append(_Part("", True, "lit"))
                return
            if c == "\\" and self.peek(1) in ('"', "\\", "$", "`", "\n"):
                if self.peek(1) == "\n":
                    self.line += 1
                else:
                    lit.append(self.peek(1))
                self.i += 2
                continue
            if c == "$":
                part = self._dollar(quoted=True)
                if part is not None:
                    flush()
                    word.parts.append(part)
                    continue
            if c == "`":
                flush()
                word.parts.append(_Part(self._backtick(), True, "cmd"))
                continue
            if c == "\n":
                self.line += 1
            lit.append(c)
            self.i += 1
        raise self.err(
            f'unterminated quote: the " opened on line {start_line} of the script never closes',
            start_line,
            "close the quote",
        )

    def _dollar(self, quoted: bool) -> _Part | None:
        start = self.i
        part = self._dollar_part(quoted)
        if part is not None:
            part.src = self.text[start : self.i]
        return part

    def _dollar_part(self, quoted: bool) -> _Part | None:
        nxt = self.peek(1)
        if self.text.startswith("$((", self.i):
            self.i += 3
            return _Part(self._until_close("((", "))", "$(("), quoted, "arith")
        if nxt == "(":
            self.i += 2
            return _Part(self._until_close("(", ")", "$("), quoted, "cmd")
        if nxt == "{":
            self.i += 2
            body = self._until_close("{", "}", "${")
            kind = "at" if quoted and body == "@" else "param"
            return _Part(body, quoted, kind)
        if nxt and nxt in _SPECIAL:
            self.i += 2
            kind = "at" if quoted and nxt == "@" else "param"
            return _Part(nxt, quoted, kind)
        m = _NAME.match(self.text, self.i + 1)
        if m:
            self.i = m.end()
            return _Part(m.group(0), quoted, "param")
        return None

    def _until_close(self, opener: str, closer: str, what: str) -> str:
        start, start_line, depth = self.i, self.line, 1
        quote = ""
        while self.i < len(self.text):
            c = self.text[self.i]
            if quote:
                if c == "\\" and quote == '"':
                    self.i += 2
                    continue
                if c == quote:
                    quote = ""
            elif c in "'\"":
                quote = c
            elif c == "\\":
                self.i += 2
                continue
            elif self.text.startswith(closer, self.i):
                depth -= 1
                if depth == 0:
                    body = self.text[start : self.i]
                    self.i += len(closer)
                    return body
            elif self.text.startswith(opener, self.i) or (opener == "{" and c == "{"):
                depth += 1
            if c == "\n":
                self.line += 1
            self.i += 1
        raise self.err(
            f"unterminated {what}: opened on line {start_line} of the script, never closed",
            start_line,
            f"close it with {closer!r}",
        )

    def _backtick(self) -> str:
        start_line = self.line
        end = self.text.find("`", self.i + 1)
        if end < 0:
            raise self.err(
                f"unterminated quote: the ` opened on line {start_line} of the script never closes",
                start_line,
                "close the backtick",
            )
        body = self.text[self.i + 1 : end]
        self.line += body.count("\n")
        self.i = end + 1
        return body


# --------------------------------------------------------------------------- expansion

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


def split_words(
    text: str, *, source: str = "", line: int | None = None, key: str = ""
) -> list[str]:
    """A command line split into words by shell quoting rules, nothing expanded
    (``VLLM_ADDITIONAL_ARGS``, a docker-compose ``command`` string)."""
    lexer = _Lexer(text, source, line, key)
    out: list[str] = []
    for token in lexer.tokens():
        if isinstance(token, _Word):
            out.append(token.raw())
        elif token.text != "\n":
            out.append(token.text)
    return out
