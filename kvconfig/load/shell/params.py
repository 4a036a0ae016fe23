"""Parameter expansion: ``$NAME``, ``${NAME}`` and every ``${NAME...}`` operator (defaults,
alternatives, ``?``, lengths, trims, replacements, substrings, case changes, indirection,
array elements), the expansion of one word without field splitting, ``~`` and shell
patterns built from words. A value only known at run time comes back as None, with what
was unknown.
"""

from __future__ import annotations

import re

from kvconfig.errors import ScriptStops as _Stop
from kvconfig.load.shell.arith import arith
from kvconfig.load.shell.globs import _glob_regex, _quoted, _replace, _trim
from kvconfig.load.shell.maps import _Maps
from kvconfig.load.shell.state import MAX_TEXTS
from kvconfig.load.shell.words import HOLE, _Part, _source_form, _Word, hole, holes_named

_PARAM = re.compile(
    r"^(?P<len>#)?(?P<bang>!)?(?P<name>[A-Za-z_][A-Za-z0-9_]*|[@*#?$!0-9-]|[0-9]+)"
    r"(?:\[(?P<index>[^\]]*)\])?(?P<op>.*)$",
    re.S,
)


_DEFAULT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(:?)-(.*)", re.S)
"""``${NAME:-word}`` and ``${NAME-word}``."""


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TESTS_SET = re.compile(r":?[-=?+]")
_DEFAULTS = re.compile(r"(:?)([-=?+])(.*)$", re.S)


class _Params(_Maps):
    holes_ok = False
    """A command's words are being expanded: ``"$@"`` and ``"${A[@]}"`` may give fields
    holding run-time parts, which ``kvconfig.load.shell.simple`` takes apart."""

    # ----- expansions -------------------------------------------------------------------
    def param(self, body: str, quoted: bool) -> tuple[str | None, str, list[str] | None]:
        """(value or None, what was unknown, array fields for ``${A[@]}``)."""
        m = _PARAM.match(body)
        if m is None or (m.group("bang") and self.dialect != "bash"):
            return None, "${" + body + "}", None
        name, index, op = m.group("name"), m.group("index"), m.group("op")
        if m.group("bang"):
            if index in ("@", "*") and not op and not m.group("len"):
                keys = self.array_keys(name)
                if keys is None:
                    return None, "${" + body + "}", None
                if index == "@":
                    return " ".join(keys), "", keys
                return (self.ifs_join(keys) if quoted else " ".join(keys)), "", None
            if op or index is not None:
                return None, "${" + body + "}", None
            is_set, target = self.lookup(name)
            if target is None:
                return None, "${" + body + "}", None
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+", target or ""):
                return None, "${" + body + "}", None
            name = target
        if index is not None:
            if self.dialect != "bash" or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                return None, "${" + body + "}", None
            if self.is_map(name):  # declare -A (kvconfig.load.shell.maps)
                return self.map_param(name, index, bool(m.group("len")), op, body, quoted)
            values = self.state.arrays.get(name)
            if values is None:
                is_set, scalar = self.lookup(name)
                values = [scalar] if is_set else []
            merged = any(v is None for v in values)  # its length only known at run time
            marked = [v for v in values if v is not None and HOLE.search(v)]
            if index in ("@", "*"):
                if m.group("len") and not op and not merged:
                    return str(len(values)), "", None
                if op or merged:
                    return None, "${" + body + "}", None
                if marked and not (index == "@" and quoted and self.holes_ok):
                    # elements holding run-time parts: only a command's words take them
                    # apart ("${A[@]}": one word each, kvconfig.load.shell.simple)
                    return None, holes_named(marked[0])[1] or "${" + body + "}", None
                known = [v or "" for v in values]
                if index == "@":
                    return " ".join(known), "", known
                return (self.ifs_join(known) if quoted else " ".join(known)), "", None
            index = self.subscript(index)
            if index is None:
                return None, "${" + body + "}", None
            try:
                k = arith(index, self.arith_var)
            except ValueError:
                return None, "${" + body + "}", None
            if k is None:
                return None, "${" + body + "}", None
            if k < 0:
                k += len(values)
            if merged and not 0 <= k < len(values):
                return None, "${" + body + "}", None
            value = values[k] if 0 <= k < len(values) else ""
            is_set = 0 <= k < len(values)
            if value is not None and HOLE.search(value):  # "--model=$M" of a run-time $M
                return None, holes_named(value)[1] or "${" + body + "}", None
            if m.group("len"):
                if op:
                    return None, "${" + body + "}", None
                return (
                    (None, "${" + body + "}", None)
                    if value is None
                    else (str(len(value)), "", None)
                )
            return self.operate(name, is_set, value, op, body, quoted)
        if m.group("len"):
            if op:
                return None, "${" + body + "}", None
            is_set, value = self.lookup(name)
            if name in ("@", "*"):
                args = self.state.args
                return (None, "$#", None) if args is None else (str(len(args) - 1), "", None)
            if self.state.nounset and not is_set:
                raise _Stop  # ${#X} of an unset X under set -u
            if value is None:
                return None, "${#" + name + "}", None
            if not is_set and name.isalpha() is False and self.dialect == "sh":
                return str(len(value)), "", None
            return str(len(value)), "", None
        is_set, value = self.lookup(name)
        return self.operate(name, is_set, value, op, body, quoted)

    def map_param(  # noqa: PLR0917
        self, name: str, index: str, length: bool, op: str, body: str, quoted: bool
    ) -> tuple[str | None, str, list[str] | None]:
        if index in ("@", "*"):
            keys, values = self.map_keys(name), self.map_values(name)
            if length and keys is not None and not op:
                return str(len(keys)), "", None
            if values is None or op or length:
                return None, "${" + body + "}", None
            return " ".join(values), "", values if index == "@" else None
        found = self.map_element(name, index)
        if found is None or (length and (op or found[2] is None)):
            return None, "${" + body + "}", None
        return (
            (str(len(found[2] or "")), "", None)
            if length
            else self.operate(*found, op, body, quoted)
        )

    def operate(  # noqa: PLR0917 (one branch per operator)
        self, name: str, is_set: bool, value: str | None, op: str, body: str, quoted: bool
    ) -> tuple[str | None, str, list[str] | None]:
        whole = "${" + body + "}"
        what = self.unknown_why(name) if name.isidentifier() or name.isdigit() else "$" + name
        tests_set = _TESTS_SET.match(op) is not None  # ${X-w}: no error under set -u
        if self.state.nounset and not is_set and name not in ("@", "*") and not tests_set:
            raise _Stop  # set -u: "unbound variable", and the shell exits
        if not op:
            if value is None:
                return None, what, None
            if name in ("@",) and quoted:
                args = self.state.args
                return value, "", None if args is None else list(args[1:])
            return value, "", None
        mm = _DEFAULTS.match(op)
        if mm:
            if value is None:
                return None, what, None
            colon, kind, arg = mm.group(1), mm.group(2), mm.group(3)
            present = is_set and (not colon or bool(value))
            if kind in "-=":
                if present:
                    return value, "", None
                default, unknown = self.expand_inner(arg, quoted)
                if default is None:
                    return None, unknown, None
                if kind == "=":
                    if not name.isidentifier():
                        return None, whole, None
                    self.assign(name, default)
                return default, "", None
            if kind == "+":
                if not present:
                    return "", "", None
                alt, unknown = self.expand_inner(arg, quoted)
                return (alt, "", None) if alt is not None else (None, unknown, None)
            if not present:  # "?": the shell prints the message and stops
                raise _Stop
            return value, "", None
        if value is None:
            return None, what, None
        mm = re.match(r"(##?|%%?)(.*)$", op, re.S)
        if mm:
            pattern = self.pattern_of(mm.group(2))
            if pattern is None:
                return None, whole, None
            return _trim(value, pattern, mm.group(1)), "", None
        if self.dialect != "bash":
            return None, whole, None
        mm = re.match(r"(//?|/#|/%)([^/]*)(?:/(.*))?$", op, re.S)
        if mm:
            pattern = self.pattern_of(mm.group(2))
            repl, unknown = self.expand_inner(mm.group(3) or "", quoted)
            if pattern is None or repl is None or not mm.group(2):
                return None, whole, None
            return _replace(value, pattern, repl, mm.group(1)), "", None
        mm = re.match(r":([^:]*)(?::(.*))?$", op, re.S)
        if mm and not mm.group(1).startswith(("-", "=", "?", "+")):
            try:
                offset = arith(mm.group(1), self.arith_var)
                length = None if mm.group(2) is None else arith(mm.group(2), self.arith_var)
            except ValueError:
                return None, whole, None
            if offset is None or (mm.group(2) is not None and length is None):
                return None, whole, None
            if offset < 0:
                offset = max(len(value) + offset, 0) if len(value) + offset >= 0 else len(value) + 1
            if offset > len(value):
                return "", "", None
            if length is None:
                return value[offset:], "", None
            end = offset + length if length >= 0 else len(value) + length
            if end < offset:
                return None, whole, None
            return value[offset:end], "", None
        if op in ("^^", ",,", "^", ","):
            if op == "^^":
                return value.upper(), "", None
            if op == ",,":
                return value.lower(), "", None
            if op == "^":
                return value[:1].upper() + value[1:], "", None
            return value[:1].lower() + value[1:], "", None
        return None, whole, None

    def expand_inner(self, text: str, quoted: bool) -> tuple[str | None, str]:
        """The word of ``${NAME:-word}`` as one string (split later with the outer word)."""
        value, unknown = self.expand_string(self.inner_word(text, quoted))
        return value, unknown

    def inner_word(self, text: str, quoted: bool) -> _Word:
        """The word of ``${NAME:-word}``, lexed as the quotes around the expansion say."""
        lexer = self.lexer(text)
        if quoted:
            word = _Word(line=1)
            lexer._double_quoted(word, to_end=True)
            return word
        return lexer._word(frozenset())

    def expand_string(self, word: _Word) -> tuple[str | None, str]:
        """A word expanded without field splitting (assignments, ``case`` words)."""
        out: list[str] = []
        for k, part in enumerate(word.parts):
            value, what = self.part_value(part, tilde=k == 0, assignment=True)
            if value is None:
                return None, what
            out.append(value if part.kind != "at" else " ".join(self.state.args or [])[0:0] + value)
        return "".join(out), ""

    def expand_template(self, word: _Word) -> tuple[str, ...]:
        """A word expanded as ``expand_string`` does, each part only known at run time
        kept as a hole (``kvconfig.load.shell.words.hole``), a variable's own holes too:
        one text per combination of the texts its variables may hold (at most
        ``MAX_TEXTS``, then the first of each)."""
        out: tuple[str, ...] = ("",)
        for k, part in enumerate(word.parts):
            name = part.text if part.kind == "param" else ""
            texts: tuple[str, ...] | None = None
            if _NAME.fullmatch(name) and self.lookup(name)[1] is None:
                texts = self.state.templates.get(name)
            default = _DEFAULT.fullmatch(name)
            if default is not None:  # ${X:-$(...)/bin/vllm} with X unset: the word's texts
                is_set, value = self.lookup(default.group(1))
                if value is not None and not (is_set and (not default.group(2) or value)):
                    texts = self.expand_template(self.inner_word(default.group(3), part.quoted))
            if texts is None:
                texts = (self.part_template(part, tilde=k == 0),)
            if len(out) * len(texts) > MAX_TEXTS:
                texts = texts[:1]
            out = tuple(a + b for a in out for b in texts)
        return out

    def part_template(self, part: _Part, tilde: bool) -> str:
        """A part's text as an assignment takes it, each run-time part of it a hole."""
        value, what = self.part_value(part, tilde, assignment=True)
        if value is not None:
            return value
        if not what or (part.kind == "param" and not what.startswith(("$", "`", "~"))):
            what = _source_form(part)  # named as written, not by why it is unknown
        return hole(what)

    def part_value(
        self, part: _Part, tilde: bool, assignment: bool = False
    ) -> tuple[str | None, str]:
        if part.kind == "lit":
            if tilde and not part.quoted and part.text.startswith("~"):
                return self.tilde(part.text)
            if assignment and not part.quoted and ":~" in part.text and self.dialect == "bash":
                return None, "~"
            return part.text, ""
        if part.kind in ("param", "at"):
            value, what, fields = self.param(part.text, part.quoted)
            if fields is not None:
                return " ".join(fields), ""
            return value, what or _source_form(part)
        if part.kind == "arith":
            text, unknown = self.expand_inner(part.text, True)
            if text is None:
                return None, unknown
            try:
                number = arith(text, self.arith_var)
            except ValueError:
                return None, _source_form(part)
            return (None, _source_form(part)) if number is None else (str(number), "")
        return None, _source_form(part)

    def tilde(self, text: str) -> tuple[str | None, str]:
        head, slash, rest = text.partition("/")
        if head != "~":
            return None, head
        is_set, home = self.lookup("HOME")
        if not is_set or home is None:
            return None, "~ ($HOME)"
        return home + slash + rest, ""

    def array_keys(self, name: str) -> list[str] | None:
        """``${!NAME[@]}`` (bash): the indices of the array's elements, ``0`` for a set
        scalar, none for an unset name; None when the array is only known at run time."""
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            return None
        if self.is_map(name):
            keys = self.map_keys(name)
            return None if keys is None or len(keys) > 1 else keys
        values = self.state.arrays.get(name)
        if values is None:
            is_set, _scalar = self.lookup(name)
            return ["0"] if is_set else []
        if any(v is None for v in values):
            return None  # an array merged from run-time branches: its length is not known
        return [str(k) for k in range(len(values))]

    def pattern_of(self, text: str) -> re.Pattern[str] | None:
        word = self.lexer(text)._word(frozenset())
        return self.pattern(word)

    def pattern(self, word: _Word) -> re.Pattern[str] | None:
        """A shell pattern as a regular expression; None when part of it is unknown. The
        word is written as one pattern, its quoted characters each behind a backslash, so
        that a bracket expression may span quoted parts (``[a"&&"b]``)."""
        text: list[str] = []
        for k, part in enumerate(word.parts):
            if part.kind == "lit":
                value = part.text
                if k == 0 and not part.quoted and value.startswith("~"):
                    home, _ = self.tilde(value)
                    if home is None:
                        return None
                    text.append(_quoted(home))
                    continue
            else:
                found, _ = self.part_value(part, tilde=False)
                if found is None:
                    return None
                value = found
            text.append(_quoted(value) if part.quoted else value)
        regex = _glob_regex("".join(text))
        if regex is None:
            return None
        try:
            return re.compile(regex, re.S)
        except re.error:
            return None
