"""A script run without running anything: what bash or dash decide from known values.

The evaluator walks the parsed script with the variables kvconfig knows. A condition
whose value it knows (``[ "$PROFILE" = throughput ]`` with ``PROFILE`` in the pod's env)
picks its branch as the shell would; one it cannot know (a Secret, ``$(...)``, a file
test, an external command's status) takes every branch, and what differs between them
(a variable, which command runs) is only known at run time: it stays unknown, never
guessed. Assignments, ``export``/``declare``/``readonly``/``local``, ``set --``,
``shift``, subshells and pipelines (their assignments do not reach the script), functions,
``eval``, nested ``sh -c``, bash arrays and the wrappers that run a command
(``exec``, ``timeout``, ``numactl``, ``taskset``, ``nice``, ``stdbuf``, ``tini --``,
``dumb-init``, ``env`` ...) are followed.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kvconfig.errors import InputError
from kvconfig.errors import ScriptJumps as _Jump
from kvconfig.errors import ScriptStops as _Stop
from kvconfig.load.shell import parser as p
from kvconfig.load.shell.arith import arith
from kvconfig.load.shell.lexer import _Lexer, _Part, _source_form, _Word
from kvconfig.load.shell.wrappers import SHELLS, script_of, unwrap

MAX_SCRIPT_BYTES = 256 * 1024
"""Longest script kvconfig reads (the launch scripts of real manifests are a few KiB)."""

MAX_EVAL_DEPTH = 8
"""Deepest nesting of ``eval``, ``sh -c`` and function calls kvconfig follows."""

MAX_STEPS = 20000
"""Most commands kvconfig evaluates in one script (loops included)."""

MAX_LOOP = 256
"""Most iterations of one loop kvconfig follows before the rest is unknown."""


@dataclass(frozen=True, slots=True)
class Command:
    """One simple command of a script that runs a program, its words expanded."""

    words: tuple[str, ...]
    """The command's words after expansion (wrappers such as ``exec`` removed)."""
    env: Mapping[str, str | None]
    """The exported environment it runs with; None: the value is not known."""
    unknown: tuple[tuple[int, str], ...] = ()
    """(word index, what was unknown there: ``$SECRET``, ``$(...)``)."""
    line: int | None = None
    """Line in the file where the command starts, when known."""
    background: bool = False
    """Started with ``&``: the script goes on while it runs."""
    when: tuple[str, ...] = ()
    """Why it may not run: conditions only known at run time (empty: it runs when reached)."""
    branch: tuple[tuple[int, int], ...] = ()
    """(choice, alternative taken) for every run-time choice above it."""
    replaces: bool = False
    """Run by ``exec``: the script ends with it."""


@dataclass
class _State:
    vars: dict[str, str | None]
    exported: set[str]
    args: list[str] | None
    arrays: dict[str, list[str | None]] = field(default_factory=dict)
    readonly: set[str] = field(default_factory=set)
    functions: dict[str, p.Node] = field(default_factory=dict)
    when: tuple[str, ...] = ()
    branch: tuple[tuple[int, int], ...] = ()
    why: dict[str, str] = field(default_factory=dict)
    status: int | None = 0
    maybe_exported: set[str] = field(default_factory=set)

    def copy(self) -> _State:
        return _State(
            dict(self.vars),
            set(self.exported),
            None if self.args is None else list(self.args),
            {k: list(v) for k, v in self.arrays.items()},
            set(self.readonly),
            dict(self.functions),
            self.when,
            self.branch,
            dict(self.why),
            self.status,
            set(self.maybe_exported),
        )


_PARAM = re.compile(
    r"^(?P<len>#)?(?P<bang>!)?(?P<name>[A-Za-z_][A-Za-z0-9_]*|[@*#?$!0-9-]|[0-9]+)"
    r"(?:\[(?P<index>[^\]]*)\])?(?P<op>.*)$",
    re.S,
)
_DEFAULT_IFS = " \t\n"
_WORD_DEFAULT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-])(:?)([-+])(.*)$", re.S)


class _Shell:
    def __init__(  # noqa: PLR0917 (the script's starting state)
        self,
        env: Mapping[str, str | None],
        args: Sequence[str] | None,
        unknown_rest: bool,
        source: str,
        line0: int | None,
        key: str,
        dialect: str,
    ) -> None:
        self.state = _State(dict(env), set(env), None if args is None else list(args))
        for name, value in env.items():
            if value is None:
                self.state.why[name] = "$" + name
        self.unknown_rest = unknown_rest
        self.source = source
        self.line0 = line0
        self.key = key
        self.dialect = dialect
        self.commands: list[Command] = []
        self.blind: list[str] = []
        self.steps = 0
        self.choices = 0
        self.depth = 0
        self.last_unknown = ""
        self.local_frames: list[dict[str, tuple[bool, str | None, bool]]] = []

    # ----- errors and lines -----------------------------------------------------------
    def at(self, line: int) -> int | None:
        return None if self.line0 is None else self.line0 + line - 1

    def lexer(self, text: str) -> _Lexer:
        return _Lexer(text, self.source, self.line0, self.key, self.dialect)

    # ----- variables --------------------------------------------------------------------
    def lookup(self, name: str) -> tuple[bool, str | None]:
        """(is set, value); a set variable with value None holds an unknown value."""
        st = self.state
        if name.isdigit():
            if st.args is None:
                return True, None
            n = int(name)
            return (n < len(st.args), st.args[n] if n < len(st.args) else "")
        if name == "#":
            return True, None if st.args is None else str(max(len(st.args) - 1, 0))
        if name in ("@", "*"):
            if st.args is None:
                return True, None
            return bool(st.args[1:]), self.ifs_join(st.args[1:])
        if name == "?":
            return True, None if st.status is None else str(st.status)
        if name in "$!-":
            return True, None
        if name in st.arrays:
            values = st.arrays[name]
            return (bool(values), values[0] if values else "")
        if name in st.vars:
            return True, st.vars[name]
        if self.unknown_rest:
            return True, None
        return False, ""

    def ifs(self) -> str:
        is_set, value = self.lookup("IFS")
        if not is_set:
            return _DEFAULT_IFS
        return value if value is not None else _DEFAULT_IFS

    def ifs_join(self, values: Sequence[str]) -> str:
        known, value = self.lookup("IFS")
        sep = " " if not known else (value or "")[:1]
        return sep.join(values)

    def assign(self, name: str, value: str | None, why: str = "") -> None:
        st = self.state
        if name in st.readonly:
            if self.dialect == "sh":
                raise _Stop  # dash: assigning a readonly variable stops the script
            st.status = 1
            return
        if name in st.arrays:
            st.arrays[name][0:1] = [value]
        st.vars[name] = value
        if value is None:
            st.why[name] = why or ("$" + name)
        else:
            st.why.pop(name, None)

    def unknown_why(self, name: str) -> str:
        return self.state.why.get(name, "$" + name)

    # ----- expansions -------------------------------------------------------------------
    def param(self, body: str, quoted: bool) -> tuple[str | None, str, list[str] | None]:
        """(value or None, what was unknown, array fields for ``${A[@]}``)."""
        m = _PARAM.match(body)
        if m is None or (m.group("bang") and self.dialect != "bash"):
            return None, "${" + body + "}", None
        name, index, op = m.group("name"), m.group("index"), m.group("op")
        if m.group("bang"):
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
            values = self.state.arrays.get(name)
            if values is None:
                is_set, scalar = self.lookup(name)
                values = [scalar] if is_set else []
            if index in ("@", "*"):
                if m.group("len") and not op:
                    return str(len(values)), "", None
                if op or any(v is None for v in values):
                    return None, "${" + body + "}", None
                known = [v or "" for v in values]
                if index == "@":
                    return " ".join(known), "", known
                return (self.ifs_join(known) if quoted else " ".join(known)), "", None
            try:
                k = arith(index, self.arith_var)
            except ValueError:
                return None, "${" + body + "}", None
            if k is None:
                return None, "${" + body + "}", None
            if k < 0:
                k += len(values)
            value = values[k] if 0 <= k < len(values) else ""
            is_set = 0 <= k < len(values)
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
            if value is None:
                return None, "${#" + name + "}", None
            if not is_set and name.isalpha() is False and self.dialect == "sh":
                return str(len(value)), "", None
            return str(len(value)), "", None
        is_set, value = self.lookup(name)
        return self.operate(name, is_set, value, op, body, quoted)

    def operate(  # noqa: PLR0917 (one branch per operator)
        self, name: str, is_set: bool, value: str | None, op: str, body: str, quoted: bool
    ) -> tuple[str | None, str, list[str] | None]:
        whole = "${" + body + "}"
        what = self.unknown_why(name) if name.isidentifier() else "$" + name
        if not op:
            if value is None:
                return None, what, None
            if name in ("@",) and quoted:
                args = self.state.args
                return value, "", None if args is None else list(args[1:])
            return value, "", None
        mm = re.match(r"(:?)([-=?+])(.*)$", op, re.S)
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

    def arith_var(self, name: str) -> int | None:
        _is_set, value = self.lookup(name)
        if value is None:
            return None
        if not value.strip():
            return 0
        try:
            return arith(value, self.arith_var, depth=1)
        except ValueError:
            return None

    def expand_inner(self, text: str, quoted: bool) -> tuple[str | None, str]:
        """The word of ``${NAME:-word}`` as one string (split later with the outer word)."""
        lexer = self.lexer(text)
        if quoted:
            word = _Word(line=1)
            lexer._double_quoted(word, to_end=True)
        else:
            word = lexer._word(frozenset())
        value, unknown = self.expand_string(word)
        return value, unknown

    def expand_string(self, word: _Word) -> tuple[str | None, str]:
        """A word expanded without field splitting (assignments, ``case`` words)."""
        out: list[str] = []
        for k, part in enumerate(word.parts):
            value, what = self.part_value(part, tilde=k == 0, assignment=True)
            if value is None:
                return None, what
            out.append(value if part.kind != "at" else " ".join(self.state.args or [])[0:0] + value)
        return "".join(out), ""

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

    def expand_word(self, word: _Word) -> tuple[list[str], list[str]]:
        """The fields of a word, and what in it was unknown (then one field, as written)."""
        fields: list[str] = []
        cur: str | None = None
        unknown: list[str] = []
        glob = False
        ifs = self.ifs()

        def split(value: str) -> None:
            nonlocal cur
            if not ifs:
                if value:
                    cur = (cur or "") + value
                return
            ws = "".join(c for c in ifs if c in " \t\n")
            nws = "".join(c for c in ifs if c not in " \t\n")
            parts = [f"[{re.escape(ws)}]+"] if ws else []
            if nws:
                around = f"[{re.escape(ws)}]*" if ws else ""
                parts.insert(0, f"{around}[{re.escape(nws)}]{around}")
            delim = re.compile("|".join(parts))
            pieces = delim.split(value)
            delims = delim.findall(value)
            for k, piece in enumerate(pieces):
                if k > 0 and cur is not None:
                    fields.append(cur)
                    cur = None
                hard = k < len(delims) and any(c in nws for c in delims[k])
                if piece:
                    cur = (cur or "") + piece
                elif hard:
                    cur = cur or ""

        parts = list(word.parts)
        k = -1
        while k + 1 < len(parts):
            k += 1
            part = parts[k]
            if part.kind == "array":
                unknown.append("(...)")
                continue
            mm = _WORD_DEFAULT.match(part.text) if part.kind == "param" else None
            if mm is not None and not part.quoted:
                # ${X:-word} unquoted: the word's own quotes decide how it splits
                is_set, value = self.lookup(mm.group(1))
                if value is not None:
                    present = is_set and (not mm.group(2) or bool(value))
                    if present == (mm.group(3) == "+"):
                        parts[k + 1 : k + 1] = self.lexer(mm.group(4))._word(frozenset()).parts
                        continue
                    if mm.group(3) == "+":
                        continue
            if part.kind in ("param", "at") and part.quoted:
                value, _what, many = self.param(part.text, True)
                if many is not None:
                    if many:
                        cur = (cur or "") + many[0]
                        for item in many[1:]:
                            fields.append(cur)
                            cur = item
                    continue
                if value is None:
                    unknown.append(_source_form(part))
                    continue
                cur = (cur or "") + value
                continue
            if part.kind == "lit":
                if part.quoted:
                    cur = (cur or "") + part.text
                    continue
                text = part.text
                if k == 0 and text.startswith("~"):
                    value, _what = self.tilde(text)
                    if value is None:
                        unknown.append(text.partition("/")[0])
                        continue
                    cur = (cur or "") + value
                    continue
                if _has_glob(text):
                    glob = True
                if text:
                    cur = (cur or "") + text
                continue
            if part.kind == "param" and re.fullmatch(
                r"[@*]|[A-Za-z_][A-Za-z0-9_]*\[[@*]\]", part.text
            ):
                _, _what, many = self.param(part.text.replace("*", "@"), True)
                if many is None:
                    unknown.append(_source_form(part))
                    continue
                for n, item in enumerate(many):
                    if n > 0 and cur is not None:
                        fields.append(cur)
                        cur = None
                    if _has_glob(item):
                        glob = True
                    split(item)
                continue
            value, _what = self.part_value(part, tilde=False)
            if value is None:
                unknown.append(_source_form(part))
                continue
            if part.quoted:
                cur = (cur or "") + value
                continue
            if _has_glob(value):
                glob = True
            split(value)
        if cur is not None:
            fields.append(cur)
        if not unknown and glob and any(_has_glob(f) for f in fields):
            unknown.append(word.raw())
        if unknown:
            return [word.raw()], unknown
        return fields, []

    def pattern_of(self, text: str) -> re.Pattern[str] | None:
        word = self.lexer(text)._word(frozenset())
        return self.pattern(word)

    def pattern(self, word: _Word) -> re.Pattern[str] | None:
        """A shell pattern as a regular expression; None when part of it is unknown."""
        out: list[str] = []
        for k, part in enumerate(word.parts):
            if part.kind == "lit":
                text = part.text
                if k == 0 and not part.quoted and text.startswith("~"):
                    value, _ = self.tilde(text)
                    if value is None:
                        return None
                    out.append(re.escape(value))
                    continue
                out.append(re.escape(text) if part.quoted else _glob_regex(text))
                continue
            value, _ = self.part_value(part, tilde=False)
            if value is None:
                return None
            out.append(re.escape(value) if part.quoted else _glob_regex(value))
        try:
            return re.compile("".join(out), re.S)
        except re.error:
            return None

    # ----- running ------------------------------------------------------------------------
    def run_node(self, node: p.Node) -> int | None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise InputError(
                f"the script runs more than {MAX_STEPS} commands before starting vLLM",
                source=self.source,
                line=self.line0,
                key=self.key,
                hint="keep the launch script short",
            )
        st = self.state
        if isinstance(node, p.Sequence):
            status: int | None = 0
            for item, background in node.items:
                if background:
                    saved = self.state
                    self.state = saved.copy()
                    with contextlib.suppress(_Stop):
                        self.run_node(item) if not isinstance(item, p.Simple) else self.simple(
                            item, background=True
                        )
                    self.state = saved
                    status = 0
                else:
                    status = self.run_node(item)
                self.state.status = status
            return status
        if isinstance(node, p.Simple):
            status = self.simple(node)
        elif isinstance(node, p.AndOr):
            status = self.run_node(node.first)
            for op, nxt in node.rest:
                self.state.status = status
                if status is None:
                    reason = self.reason(node_line(node.first), "the status of the command")
                    status = self.fork([[nxt], []], reason, self.run_node)
                elif (status == 0) == (op == "&&"):
                    status = self.run_node(nxt)
        elif isinstance(node, p.Pipeline):
            status = 0
            for k, cmd in enumerate(node.commands):
                saved = self.state
                self.state = saved.copy()
                try:
                    status = self.run_node(cmd)
                except _Stop:
                    status = None
                except _Jump:
                    status = None
                self.state = saved
                del k
            if node.negate:
                status = None if status is None else int(status == 0)
        elif isinstance(node, p.Group):
            if node.subshell:
                saved = self.state
                self.state = saved.copy()
                try:
                    status = self.run_node(node.body)
                except _Stop:
                    status = None
                self.state = saved
            else:
                status = self.run_node(node.body)
        elif isinstance(node, p.If):
            status = self.run_if(node, 0)
        elif isinstance(node, p.Case):
            status = self.run_case(node)
        elif isinstance(node, p.For):
            status = self.run_for(node)
        elif isinstance(node, p.Loop):
            status = self.run_loop(node)
        elif isinstance(node, p.Function):
            st.functions[node.name] = node.body
            status = 0
        else:  # pragma: no cover - every node kind is handled above
            raise TypeError(node)
        self.state.status = status
        return status

    def reason(self, line: int, what: str) -> str:
        why = self.last_unknown or "a command's status"
        at = self.at(line)
        where = f" on line {at}" if at is not None else ""
        return f"{what}{where} ({why} only known at run time)"

    def fork(
        self,
        alternatives: list[list[p.Node]],
        reason: str,
        run: object,
        before: list[object] | None = None,
    ) -> int | None:
        """Run each alternative on its own copy of the state, then keep what they agree on."""
        self.choices += 1
        choice = self.choices
        start = self.state
        ends: list[_State] = []
        statuses: list[int | None] = []
        for k, nodes in enumerate(alternatives):
            self.state = start.copy()
            self.state.when = (*start.when, reason)
            self.state.branch = (*start.branch, (choice, k))
            try:
                if before is not None and before[k] is not None:
                    before[k]()  # type: ignore[operator]
                status: int | None = 0
                for node in nodes:
                    status = run(node)  # type: ignore[operator]
                ends.append(self.state)
                statuses.append(status)
            except _Stop:
                continue
        if not ends:
            self.state = start
            raise _Stop
        merged = start.copy()
        if len(ends) < len(alternatives):
            merged.when = (*start.when, f"the script goes on past {reason}")
        _merge(merged, ends, reason)
        later = [w for e in ends for w in e.when[len(start.when) + 1 :]]
        if later:  # a condition one branch added (a shift that may fail) holds after it too
            merged.when = (*merged.when, *dict.fromkeys(later))
        self.state = merged
        first = statuses[0]
        return first if all(s == first for s in statuses) else None

    def run_if(self, node: p.If, k: int) -> int | None:
        if k >= len(node.clauses):
            return self.run_node(node.otherwise) if node.otherwise is not None else 0
        cond, body = node.clauses[k]
        self.last_unknown = ""
        status = self.run_node(cond)
        if status == 0:
            return self.run_node(body)
        if status is not None:
            return self.run_if(node, k + 1)
        reason = self.reason(cond_line(cond, node.line), "the test")
        return self.fork(
            [[body], []],
            reason,
            self.run_node,
            [None, lambda: self.run_if(node, k + 1)],
        )

    def run_case(self, node: p.Case) -> int | None:
        subject, what = self.expand_string(node.word)
        return self.case_from(node, 0, subject, what)

    def case_from(self, node: p.Case, k: int, subject: str | None, what: str) -> int | None:
        for n in range(k, len(node.items)):
            patterns, body = node.items[n]
            matched: bool | None = False
            for pat in patterns:
                regex = self.pattern(pat)
                if regex is not None and regex.pattern and not regex.pattern.replace(".*", ""):
                    matched = True  # "*" matches every word, known or not
                    break
                if regex is None or subject is None:
                    matched = None
                    self.last_unknown = what if subject is None else pat.raw()
                    continue
                if regex.fullmatch(subject):
                    matched = True
                    break
            if matched is True:
                return self.run_node(body)
            if matched is None:
                reason = self.reason(node.line, "the case")
                return self.fork(
                    [[body], []],
                    reason,
                    self.run_node,
                    [None, lambda n=n: self.case_from(node, n + 1, subject, what)],
                )
        return 0

    def run_for(self, node: p.For) -> int | None:
        items: list[str] | None = []
        if node.words is None:
            args = self.state.args
            items = None if args is None else list(args[1:])
        else:
            for w in node.words:
                fields, unknown = self.expand_word(w)
                if unknown:
                    self.last_unknown = unknown[0]
                    items = None
                    break
                assert items is not None
                items.extend(fields)
        if items is None:
            reason = self.reason(node.line, "the words of the for loop")

            def once() -> None:
                self.assign(node.name, None, reason)

            return self.fork([[node.body], []], reason, self.loop_body, [once, None])
        status: int | None = 0
        for item in items[:MAX_LOOP]:
            self.assign(node.name, item)
            try:
                status = self.run_node(node.body)
            except _Jump as jump:
                if jump.count > 1:
                    raise _Jump(jump.kind, jump.count - 1) from None
                if jump.kind == "break":
                    break
        return status

    def loop_body(self, body: p.Node) -> int | None:
        try:
            return self.run_node(body)
        except _Jump:
            return None

    def run_loop(self, node: p.Loop) -> int | None:
        seen: list[tuple[dict[str, str | None], int]] = []
        status: int | None = 0
        for _ in range(MAX_LOOP):
            self.last_unknown = ""
            cond = self.run_node(node.condition)
            if cond is not None:
                go = (cond == 0) != node.until
                if not go:
                    return status
                before = len(self.commands)
                try:
                    status = self.run_node(node.body)
                except _Jump as jump:
                    if jump.count > 1:
                        raise _Jump(jump.kind, jump.count - 1) from None
                    if jump.kind == "break":
                        return 0
                mark = (dict(self.state.vars), len(self.commands) - before)
                if mark in seen:  # the loop repeats itself: it never ends on its own
                    del self.commands[before:]
                    raise _Stop
                if len(seen) == MAX_LOOP - 1:
                    self.blind.append(f"the loop on line {self.at(node.line)} (too many rounds)")
                seen.append(mark)
                continue
            reason = self.reason(cond_line(node.condition, node.line), "the loop test")
            return self.fork([[node.body], []], reason, self.loop_body)
        self.blind.append(f"the loop on line {self.at(node.line)} (too many rounds)")
        raise _Stop

    # ----- simple commands -------------------------------------------------------------
    def simple(self, node: p.Simple, background: bool = False) -> int | None:
        words = node.words
        line = self.at(node.line)
        if node.opaque:
            self.last_unknown = "a [[ ]] test"
            return None
        assigns: list[tuple[str, str | None, str, bool]] = []
        rest = list(words)
        subst = False
        while rest:
            word0 = rest[0]
            first = word0.parts[0] if word0.parts else None
            if first is None or first.kind != "lit" or first.quoted:
                break
            m = re.match(r"([A-Za-z_][A-Za-z0-9_]*)(\+?)=", first.text)
            if not m:
                break
            rest.pop(0)
            name, append = m.group(1), bool(m.group(2))
            if len(word0.parts) > 1 and word0.parts[1].kind == "array":
                self.assign_array(name, word0.parts[1].words, append)
                continue
            value_word = _Word(
                [_Part(first.text[m.end() :], False, "lit"), *word0.parts[1:]], word0.line
            )
            subst = subst or any(part.kind == "cmd" for part in word0.parts)
            value, what = self.expand_string(value_word)
            assigns.append((name, value, what, append))
        expanded: list[str] = []
        unknown_at: list[tuple[int, str]] = []
        for w in rest:
            fields, unknown = self.expand_word(w)
            for what in unknown:
                unknown_at.append((len(expanded), what))
            expanded.extend(fields)
        if not rest:
            for name, given, what, append in assigns:
                value = given
                if append and given is not None:
                    _is_set, old = self.lookup(name)
                    value = None if old is None else (old or "") + given
                self.assign(name, value, what)
            return None if subst else 0
        if not expanded:
            return 0
        if any(i == 0 for i, _ in unknown_at):
            self.last_unknown = unknown_at[0][1]
            self.blind.append(f"the command {words[0].raw()!r} ({self.last_unknown})")
            return None
        local: dict[str, str | None] = {}
        for name, value, _what, _append in assigns:
            local[name] = value
        return self.command(expanded, unknown_at, local, line, background)

    def assign_array(self, name: str, elements: list[_Word], append: bool) -> None:
        values: list[str | None] = []
        for w in elements:
            fields, unknown = self.expand_word(w)
            values.extend([None] if unknown else fields)
        old = self.state.arrays.get(name, []) if append else []
        self.state.arrays[name] = [*old, *values]
        self.state.vars[name] = self.state.arrays[name][0] if self.state.arrays[name] else ""

    def command(
        self,
        words: list[str],
        unknown_at: list[tuple[int, str]],
        local: dict[str, str | None],
        line: int | None,
        background: bool,
    ) -> int | None:
        """Run one expanded command: a builtin, a function, a nested shell or a program."""
        head = words[0]
        known = not unknown_at

        def shift_unknown(n: int) -> list[tuple[int, str]]:
            return [(i - n, w) for i, w in unknown_at if i >= n]

        if head in (":", "true"):
            return 0
        if head == "false":
            return 1
        if head in ("[", "test", "[["):
            if head == "[[" and self.dialect != "bash":
                return 127
            if not known:
                self.last_unknown = unknown_at[0][1]
                return None
            args = words[1:]
            if head == "[":
                if not args or args[-1] != "]":
                    return 2
                args = args[:-1]
            if head == "[[":
                args = args[:-1]
            result = _test(args, self.dialect, head == "[[")
            if result is None:
                self.last_unknown = "a file or an option test"
            return result
        if head in ("echo", "printf") and not (head == "printf" and words[1:2] == ["-v"]):
            return 0
        if head in ("export", "readonly", "declare", "typeset", "local"):
            if head in ("declare", "typeset") and self.dialect != "bash":
                return 127
            return self.declare(head, words[1:], unknown_at)
        if head == "unset":
            for name in words[1:]:
                if name.startswith("-"):
                    continue
                if name in self.state.readonly:
                    return 1
                self.state.vars.pop(name, None)
                self.state.arrays.pop(name, None)
                self.state.exported.discard(name)
                self.state.maybe_exported.discard(name)
            return 0
        if head == "set":
            if not known:
                self.state.args = None
                return 0
            args = words[1:]
            k = 0
            while k < len(args):
                if args[k] == "--":
                    k += 1
                    break
                if args[k] in ("-o", "+o") and k + 1 < len(args):
                    k += 2
                    continue
                if args[k][:1] in "-+" and len(args[k]) > 1:
                    k += 1
                    continue
                break
            if k < len(args) or "--" in args[:k]:
                zero = self.state.args[0] if self.state.args else "sh"
                self.state.args = [zero, *args[k:]]
            return 0
        if head == "shift":
            if self.state.args is None or not known:
                self.state.args = None
                if self.dialect == "sh":  # dash stops when there is too little to shift
                    self.state.when = (
                        *self.state.when,
                        f"shift on line {line} succeeding (the arguments only known at run time)",
                    )
                return None
            try:
                n = int(words[1]) if len(words) > 1 else 1
            except ValueError:
                return None
            if n > len(self.state.args) - 1:
                if self.dialect == "sh":
                    raise _Stop
                return 1
            self.state.args = [self.state.args[0], *self.state.args[1 + n :]]
            return 0
        if head in ("exit", "return"):
            if head == "return" and self.local_frames:
                raise _Jump("return", 1)
            raise _Stop
        if head in ("break", "continue"):
            try:
                count = int(words[1]) if len(words) > 1 else 1
            except ValueError:
                count = 1
            raise _Jump(head, count)
        if head == "eval":
            if not known:
                self.last_unknown = unknown_at[0][1]
                self.state.args = self.state.args
                return self.opaque(f"eval of {unknown_at[0][1]}")
            return self.nested(" ".join(words[1:]), line)
        if head in (".", "source"):
            if head == "source" and self.dialect != "bash":
                return 127
            target = words[1] if len(words) > 1 else ""
            if target.endswith("/activate"):
                self.assign("VIRTUAL_ENV", None, f"the file {target}")
                return None
            return self.opaque(f"the file {target or '?'} read by {head}")
        if head in ("read", "getopts", "mapfile", "readarray") or (
            head == "printf" and words[1:2] == ["-v"]
        ):
            for name in words[1:]:
                if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                    self.assign(name, None, f"{head} on line {line}")
            return None
        if head in ("cd", "wait", "trap", "umask", "ulimit", "alias", "hash", "pushd", "popd"):
            return None if head != "trap" else 0
        if head == "let":
            return self.opaque("let") if self.dialect == "bash" else 127
        if head in self.state.functions and known:
            return self.call(head, words[1:], local)
        inner, extra, replaces, unknown_shift = unwrap(words)
        if inner is None:
            self.last_unknown = "the command"
            return None
        inner_unknown = shift_unknown(unknown_shift)
        if any(i < unknown_shift for i, _ in unknown_at) or (
            inner_unknown and inner_unknown[0][0] == 0
        ):
            self.blind.append(f"the command {' '.join(words[:2])!r}")
            return None
        local = {**local, **extra}
        if inner and inner[0] != words[0] and inner[0] in self.state.functions and known:
            return self.call(inner[0], inner[1:], local)
        script_at = script_of(inner)
        if script_at is not None and os.path.basename(inner[0]) in SHELLS:
            if any(i <= script_at for i, _ in inner_unknown):
                self.last_unknown = "the script"
                self.blind.append(f"the script of {inner[0]} -c")
                return None
            dialect = "bash" if os.path.basename(inner[0]) == "bash" else "sh"
            env = self.exported_env()
            env.update(local)
            rest_known = not inner_unknown
            sub = _Shell(
                env,
                inner[script_at + 1 :] if rest_known else None,
                self.unknown_rest,
                self.source,
                line,
                self.key,
                dialect,
            )
            sub.depth = self.depth + 1
            sub.steps = self.steps
            if sub.depth > MAX_EVAL_DEPTH:
                self.blind.append(f"{inner[0]} -c nested too deep")
                return None
            sub.state.when = self.state.when
            sub.state.branch = self.state.branch
            sub.choices = self.choices
            with contextlib.suppress(_Stop):
                sub.run_node(p.parse(sub.lexer(inner[script_at])))
            self.choices = sub.choices
            self.steps = sub.steps
            self.blind.extend(sub.blind)
            self.commands.extend(
                Command(c.words, c.env, c.unknown, c.line, background or c.background,
                        c.when, c.branch, replaces and c.replaces)
                for c in sub.commands
            )  # fmt: skip
            if replaces:
                raise _Stop
            return None
        env = self.exported_env()
        env.update(local)
        self.commands.append(
            Command(
                tuple(inner),
                env,
                tuple(inner_unknown),
                line,
                background,
                self.state.when,
                self.state.branch,
                replaces,
            )
        )
        if replaces and not background:
            raise _Stop
        return None

    def exported_env(self) -> dict[str, str | None]:
        """The environment a program started now gets (None: only known at run time)."""
        st = self.state
        env = {k: st.vars.get(k) for k in st.exported if k in st.vars}
        env.update(dict.fromkeys(st.maybe_exported & set(st.vars)))
        return env

    def opaque(self, what: str) -> int | None:
        """Something that may change any variable: everything not yet known stays unknown."""
        self.blind.append(what)
        for name in list(self.state.vars):
            if name not in self.state.readonly:
                self.assign(name, None, what)
        self.unknown_rest = True
        return None

    def declare(self, head: str, args: list[str], unknown_at: list[tuple[int, str]]) -> int | None:
        flags = ""
        status: int | None = 0
        if head == "local" and not self.local_frames:
            return 1 if self.dialect == "bash" else self.stop()
        for k, item in enumerate(args, start=1):
            if item.startswith(("-", "+")) and not flags.endswith("--"):
                flags += item
                continue
            name, eq, value = item.partition("=")
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                status = 1 if self.dialect == "bash" else self.stop()
                continue
            if head == "local" or (head in ("declare", "typeset") and self.local_frames):
                frame = self.local_frames[-1] if self.local_frames else None
                if frame is not None and name not in frame:
                    is_set, old = self.lookup(name)
                    frame[name] = (
                        is_set and name in self.state.vars,
                        old,
                        name in self.state.exported,
                    )
                    if not eq:
                        self.state.vars.pop(name, None)
            if "a" in flags or "A" in flags or "i" in flags or "n" in flags:
                self.assign(name, None, f"{head} {flags}")
                continue
            if eq:
                if name in self.state.readonly:
                    if self.dialect == "sh":
                        raise _Stop
                    status = 1
                    continue
                known = not any(i == k for i, _ in unknown_at)
                self.assign(name, value if known else None, self.last_unknown)
            if head == "export" or "x" in flags:
                self.state.exported.add(name)
                self.state.maybe_exported.discard(name)
            if head == "readonly" or "r" in flags:
                self.state.readonly.add(name)
        return status

    def stop(self) -> int:
        raise _Stop

    def call(self, name: str, args: list[str], local: dict[str, str | None]) -> int | None:
        if self.depth >= MAX_EVAL_DEPTH:
            return self.opaque(f"the function {name}")
        saved_args = self.state.args
        zero = saved_args[0] if saved_args else "sh"
        self.state.args = [zero, *args]
        self.local_frames.append({})
        self.depth += 1
        status: int | None
        try:
            status = self.run_node(self.state.functions[name])
        except _Jump as jump:
            if jump.kind != "return":
                raise
            status = None
        finally:
            self.depth -= 1
            frame = self.local_frames.pop()
            for var, (was_set, old, exported) in frame.items():
                if was_set:
                    self.state.vars[var] = old
                else:
                    self.state.vars.pop(var, None)
                if exported:
                    self.state.exported.add(var)
            self.state.args = saved_args
        return status

    def nested(self, text: str, line: int | None) -> int | None:
        if self.depth >= MAX_EVAL_DEPTH:
            return self.opaque("eval")
        outer = self.line0
        self.line0 = line
        self.depth += 1
        try:
            return self.run_node(p.parse(self.lexer(text)))
        finally:
            self.depth -= 1
            self.line0 = outer


def node_line(node: p.Node) -> int:
    line = getattr(node, "line", None)
    if isinstance(line, int):
        return line
    if isinstance(node, p.AndOr):
        return node_line(node.first)
    if isinstance(node, p.Sequence) and node.items:
        return node_line(node.items[0][0])
    return 1


def cond_line(cond: p.Sequence, default: int) -> int:
    return node_line(cond) if cond.items else default


def _merge(merged: _State, ends: list[_State], reason: str) -> None:
    names = set().union(*(set(e.vars) for e in ends)) | set(merged.vars)
    for name in names:
        values = {e.vars.get(name, "\0unset") for e in ends}
        if len(values) == 1:
            value = values.pop()
            if value == "\0unset":
                merged.vars.pop(name, None)
            else:
                merged.vars[name] = value
                if value is None:
                    merged.why[name] = ends[0].why.get(name, "$" + name)
        else:
            merged.vars[name] = None
            merged.why[name] = f"${name} (set by {reason})"
    for name in set().union(*(set(e.arrays) for e in ends)):
        arrays = [e.arrays.get(name) for e in ends]
        if all(a == arrays[0] for a in arrays) and arrays[0] is not None:
            merged.arrays[name] = list(arrays[0])
        else:
            merged.arrays[name] = [None]
    merged.exported = set().union(*(e.exported for e in ends))
    # exported on one side only: whether a program sees it is known only at run time
    merged.maybe_exported = set().union(*(e.maybe_exported for e in ends)) | (
        merged.exported - set[str].intersection(*(e.exported for e in ends))
    )
    merged.readonly = set().union(*(e.readonly for e in ends))
    arg_lists = [e.args for e in ends]
    merged.args = arg_lists[0] if all(a == arg_lists[0] for a in arg_lists) else None
    for e in ends:
        merged.functions.update(e.functions)


def _has_glob(text: str) -> bool:
    return "*" in text or "?" in text or bool(re.search(r"\[[^\]]*\]", text))


def _glob_regex(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "*":
            out.append(".*")
        elif c == "?":
            out.append(".")
        elif c == "\\" and i + 1 < len(text):
            out.append(re.escape(text[i + 1]))
            i += 1
        elif c == "[":
            end = text.find("]", i + 2 if text[i + 1 : i + 2] in ("!", "^", "]") else i + 1)
            if end < 0:
                out.append(re.escape(c))
            else:
                body = text[i + 1 : end]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def _trim(value: str, pattern: re.Pattern[str], op: str) -> str:
    ends = range(len(value) + 1)
    if op in ("#", "##"):
        order = ends if op == "#" else reversed(ends)
        for n in order:
            if pattern.fullmatch(value[:n]):
                return value[n:]
        return value
    order = reversed(ends) if op == "%" else ends
    for n in order:
        if pattern.fullmatch(value[n:]):
            return value[:n]
    return value


def _replace(value: str, pattern: re.Pattern[str], repl: str, op: str) -> str:
    if op == "/#":
        for n in reversed(range(len(value) + 1)):
            if pattern.fullmatch(value[:n]):
                return repl + value[n:]
        return value
    if op == "/%":
        for n in range(len(value) + 1):
            if pattern.fullmatch(value[n:]):
                return value[:n] + repl
        return value
    out: list[str] = []
    i = 0
    while i <= len(value):
        for n in range(len(value), i, -1):
            if pattern.fullmatch(value[i:n]):
                out.append(repl)
                i = n
                break
        else:
            if i < len(value):
                out.append(value[i])
            i += 1
            continue
        if op == "/":
            out.append(value[i:])
            return "".join(out)
    return "".join(out)


def _int(text: str) -> int | None:
    m = re.fullmatch(r"[ \t]*([-+]?[0-9]+)[ \t]*", text)
    return int(m.group(1)) if m else None


def _test(args: list[str], dialect: str, dbracket: bool) -> int | None:
    """The status of ``test ARGS`` (2: a usage error), None when it reads the system."""
    if not args:
        return 1
    if args[0] == "!" and len(args) > 1 and not (len(args) == 3 and args[1] in _BINARY):
        inner = _test(args[1:], dialect, dbracket)
        return None if inner is None else (2 if inner == 2 else int(inner == 0))
    if len(args) == 1:
        return 0 if args[0] else 1
    if len(args) == 2:
        op, value = args
        if op == "-n":
            return 0 if value else 1
        if op == "-z":
            return 0 if not value else 1
        if op in _UNARY:
            return None
        return 2
    if len(args) == 3 and args[1] in _BINARY:
        left, op, right = args
        if op in ("=", "=="):
            if op == "==" and dialect != "bash":
                return 2
            if dbracket:
                return None
            return 0 if left == right else 1
        if op == "!=":
            if dbracket:
                return None
            return 0 if left != right else 1
        if op in ("<", ">"):
            return None
        a, b = _int(left), _int(right)
        if a is None or b is None:
            return 2 if not dbracket else None
        result = {
            "-eq": a == b, "-ne": a != b, "-lt": a < b, "-le": a <= b, "-gt": a > b, "-ge": a >= b,
        }.get(op)  # fmt: skip
        return None if result is None else (0 if result else 1)
    if len(args) >= 3 and ("-a" in args or "-o" in args) and not dbracket:
        return None
    return None if dbracket else 2


_UNARY = frozenset(
    [
        "-b",
        "-c",
        "-d",
        "-e",
        "-f",
        "-g",
        "-h",
        "-k",
        "-p",
        "-r",
        "-s",
        "-t",
        "-u",
        "-w",
        "-x",
        "-L",
        "-O",
        "-G",
        "-N",
        "-S",
        "-v",
        "-R",
        "-o",
    ]
)
_BINARY = frozenset(
    ["=", "==", "!=", "<", ">", "-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-nt", "-ot", "-ef"]
)


@dataclass(frozen=True, slots=True)
class Reading:
    """What a script runs, and what kvconfig could not see into."""

    commands: tuple[Command, ...]
    """The programs it runs, in order (``when`` says which only may run)."""
    blind: tuple[str, ...]
    """Places where it may run something kvconfig cannot name (an unknown command name,
    ``eval`` of an unknown text, a sourced file); empty: ``commands`` is complete."""


def read_script(
    script: str,
    env: Mapping[str, str | None] | None = None,
    args: Sequence[str] = (),
    *,
    unknown_rest: bool = False,
    source: str = "",
    line: int | None = None,
    key: str = "",
    dialect: str = "sh",
) -> Reading:
    """The programs ``script`` runs, in order, their words expanded.

    ``env`` is the environment the script starts with (None: a value kvconfig cannot
    know, e.g. from a Secret). ``args`` are ``$0 $1 ...`` (``sh -c SCRIPT ARG0 ARG1``).
    With ``unknown_rest`` (``envFrom`` is set) a variable not in ``env`` is unknown
    rather than unset. ``line`` is the file line of the script's first line, for error
    messages. ``dialect`` is ``sh`` (dash, the ``/bin/sh`` of Debian and Ubuntu images)
    or ``bash``. Raises InputError for a script the shell cannot parse.
    """
    if len(script) > MAX_SCRIPT_BYTES:
        raise InputError(
            f"the script is {len(script)} characters; kvconfig reads at most {MAX_SCRIPT_BYTES}",
            source=source,
            line=line,
            key=key,
            hint="keep the launch script short, or move it into the image",
        )
    shell = _Shell(env or {}, list(args) or ["sh"], unknown_rest, source, line, key, dialect)
    tree = p.parse(shell.lexer(script))
    with contextlib.suppress(_Stop, _Jump):
        shell.run_node(tree)
    return Reading(tuple(shell.commands), tuple(shell.blind))


def commands(
    script: str,
    env: Mapping[str, str | None] | None = None,
    args: Sequence[str] = (),
    *,
    unknown_rest: bool = False,
    source: str = "",
    line: int | None = None,
    key: str = "",
    dialect: str = "sh",
) -> list[Command]:
    """The programs ``script`` runs (``read_script(...).commands``)."""
    reading = read_script(
        script, env, args, unknown_rest=unknown_rest, source=source, line=line, key=key,
        dialect=dialect,
    )  # fmt: skip
    return list(reading.commands)
