"""What a function of the script prints, for ``$(f ARGS)``: the shell runs ``f`` in a
subshell and the substitution is what it writes to its output, trailing newlines removed
(POSIX "Command Substitution"). kvconfig computes it (and ``$(echo ...)``, ``$(printf
...)``, ``$(cat <<EOF ... EOF)``) when ``f`` only prints text it knows
with ``echo`` (or ``printf`` of ``%s``): no program run in it, no redirection of its
output, no pipe or background command, nothing printed under a run-time choice.
Otherwise, as for any other command, the output is only known at run time.

``echo`` as each shell has it: bash's builtin takes ``-n``, ``-e`` and ``-E`` (clustered)
and leaves backslashes alone without ``-e`` (``xpg_echo`` off); dash's takes only ``-n``
and always reads backslash escapes (its manual, ``echo``). Text holding a backslash whose
reading depends on that is left to run time.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
from collections.abc import Mapping

from kvconfig.errors import ScriptJumps as _Jump
from kvconfig.errors import ScriptStops as _Stop
from kvconfig.load.shell import nodes as N
from kvconfig.load.shell import pyprint, sed
from kvconfig.load.shell.files import _Files
from kvconfig.load.shell.paths import PROGRAMS
from kvconfig.load.shell.printf import printf
from kvconfig.load.shell.words import _Word, assignment, hole, one_field

_PYTHON = re.compile(r"python(?:3(?:\.\d+)?)?")
_PYTHON_FLAGS = frozenset({"-u", "-B", "-E", "-s", "-S", "-I", "-O", "-OO", "-q"})
"""Interpreter options that change nothing a program of ``pyprint`` prints."""


class _Output(_Files):
    printed: list[str | None] | None = None
    """What the function being read for ``$(...)`` printed so far (None: none is); an
    item None: something only known at run time."""
    printing_when: tuple[str, ...] = ()
    """The run-time conditions in force when that function was called."""

    def output_of(self, node: N.Node) -> str | None:
        if isinstance(node, N.Simple) and _never_read(node, self.state.functions):
            return None
        if isinstance(node, N.Simple) and self.cats_here(node):
            # $(cat <<EOF ... EOF): the here-document's text (cat copies its input)
            text, _what = self.here_text(node.here[-1], "cat")
            return None if text is None else text.rstrip("\n")
        if isinstance(node, N.Simple) and _prints_plainly(node):
            python = self.python_printed(node)  # $(python3 - ARGS <<'PY' ... PY)
            if python is not None:
                return python.rstrip("\n")
        if isinstance(node, N.Simple) and node.here:
            return None  # another command fed a here-document: its output is not known
        if isinstance(node, N.Simple):
            words = self.program_words(node, functions=True) or self.call_words(node)
            if words and words[0] in self.state.functions:
                return self.function_output(words)
            if words and words[0] in ("echo", "printf") and _prints_plainly(node):
                printed = self.echoed(words[1:]) if words[0] == "echo" else None
                if words[0] == "printf" and len(words) > 1 and not words[1].startswith("-"):
                    printed = printf(words[1], words[2:], self.dialect == "bash")
                return None if printed is None else printed.rstrip("\n")
            if words and words[0] == "sed" and _prints_plainly(node):
                printed = self.sed_output(words[1:], None)
                return None if printed is None else printed.rstrip("\n")
        if isinstance(node, N.Pipeline) and not node.negate and len(node.commands) == 2:
            return self.filtered(node.commands[0], node.commands[1])
        return super().output_of(node)

    def printing_python(self, node: N.Simple) -> bool:
        """While a function is read for ``$(f ARGS)``: a Python program of it that
        kvconfig follows (``python_printed``; it runs nothing but prints) adds what it
        prints to the function's output, and succeeds; False for any other command."""
        if self.printed is None or not _prints_plainly(node):
            return False
        head = next((w.raw() for w in node.plain if assignment(w) is None), "")
        if not _PYTHON.fullmatch(os.path.basename(head)):
            return False
        out = self.python_printed(node)
        if out is None:
            return False
        self.printed.append(out if self.state.when == self.printing_when else None)
        return True

    def python_printed(self, node: N.Simple) -> str | None:
        """What ``python3 - ARGS <<'PY' ... PY`` or ``python3 -c PROGRAM ARGS`` prints
        (``kvconfig.load.shell.pyprint``, which runs nothing), with holes for its run-time
        parts; None when kvconfig does not follow it. Settings before the command (``X=1
        python3 -``) are the program's environment, with the variables the script
        exported."""
        words, here = node.plain, node.here
        saved = self.state
        self.state = saved.copy()  # a subshell: its expansions leave the script alone
        try:
            given: dict[str, str | None] = {}
            while words and (found := assignment(words[0])) is not None:
                name, append, value_word = found
                if append or any(p.kind == "array" for p in words[0].parts):
                    return None
                given[name] = self.expand_string(value_word)[0]
                words = words[1:]
            fields: list[str | None] = []
            for w in words:
                expanded, unknown = self.expand_word(w)
                if unknown and not one_field(w):
                    return None
                fields.extend([None] if unknown else expanded)
            head = fields[0] if fields else None
            if head is None or not _PYTHON.fullmatch(os.path.basename(head)):
                return None
            if head in self.state.functions:
                return None
            at = 1
            while at < len(fields) and fields[at] in _PYTHON_FLAGS:
                at += 1
            rest = fields[at:]
            program: str | None
            if rest[:1] == ["-c"] and len(rest) > 1 and rest[1] is not None and not here:
                program, argv = rest[1], ["-c", *rest[2:]]
            elif here and rest[:1] in (["-"], []):
                program, _what = self.here_text(here[-1], head)
                argv = ["-", *rest[1:]] if rest else [""]
            else:
                return None
            if program is None:
                return None
            env = self.exported_env()
            env.update(given)

            def variable(name: str) -> tuple[bool, str | None]:
                if name in env:
                    return True, env[name]
                if name in self.state.vars:
                    return False, None  # a shell variable, not exported
                is_set, value = self.lookup(name)
                return (True, None) if is_set and value is None else (False, None)

            named = " ".join(w for w in (head, *rest[:1]) if w is not None)
            out = pyprint.printed(program, argv, variable, named)
        except _Stop:
            return None  # an expansion ends the subshell (${X:?}), not the script
        finally:
            self.state = saved
        return out

    def cats_here(self, node: N.Simple) -> bool:
        """``cat`` alone (no option, no file, not a function), its input a here-document or
        here-string and its output not redirected."""
        rest = node.plain
        return (
            len(rest) == 1
            and len(rest) < len(node.words)
            and rest[0].raw() == "cat"
            and "cat" not in self.state.functions
            and _prints_plainly(node)
        )

    def filtered(self, first: N.Node, then: N.Node) -> str | None:
        """``$(echo TEXT | tr ...)``, ``$(echo TEXT | sed ...)``: the text ``echo``
        prints, through ``tr`` or ``sed``."""
        words = self.program_words(first)
        filter_words = self.program_words(then)
        if filter_words == ["wc", "-l"] and not words:
            return self.lines_echoed(first)
        if not words or words[0] != "echo" or not filter_words:
            return None
        printed = self.echoed(words[1:])
        if printed is None or filter_words[0] not in ("tr", "sed"):
            return None
        if filter_words[0] == "tr":
            out = translate(filter_words[1:], printed)
        else:
            out = self.sed_output(filter_words[1:], printed)
        return None if out is None else out.rstrip("\n")

    def lines_echoed(self, node: N.Node) -> str | None:
        """``$(echo "$V" | wc -l)`` where ``V`` is only known at run time but its lines are
        (its known text with run-time parts that hold no newline: SkyPilot's
        ``SKYPILOT_NODE_IPS``, one IP per line for each node): the count ``wc -l`` prints,
        the newlines ``echo`` writes. Words that may split, or any backslash, leave it to
        run time."""
        if not isinstance(node, N.Simple) or node.opaque or len(node.words) < 2:
            return None
        if node.words[0].raw() != "echo" or not all(one_field(w) for w in node.words[1:]):
            return None

        def one_text(w: _Word) -> list[str] | None:
            texts = self.expand_template(w)
            return list(texts) if len(texts) == 1 else None

        args = self.in_a_subshell(node.words[1:], one_text)
        printed = None if args is None else self.echoed(args)
        return None if printed is None else str(printed.count("\n"))

    def sed_output(self, args: list[str], given: str | None) -> str | None:
        """What ``sed ARGS`` prints (``kvconfig.load.shell.sed``): from its files, else
        from ``given`` (what a pipe feeds it; None: the script's own input)."""
        parsed = sed.parse(args)
        if parsed is None:
            return None
        script, extended, names = parsed
        if names:
            texts = [self.file_text(n) for n in names if n != "-"]
            if len(texts) != len(names) or any(t is None for t in texts):
                return None
            given = "".join(t for t in texts if t is not None)
        return None if given is None else sed.edit(script, extended, given)

    def call_words(self, node: N.Simple) -> list[str] | None:
        """``f ARGS`` where some argument is only known at run time, each such one word
        (``"$PORT"``), as a call outside ``$(...)`` passes it: a hole; None otherwise."""

        def one(w: _Word) -> list[str] | None:
            fields, unknown = self.expand_word(w)
            if unknown and (len(fields) != 1 or not one_field(w) or w is node.words[0]):
                return None
            return [hole(unknown[0])] if unknown else fields

        if node.opaque or not node.words or assignment(node.words[0]) or node.words[0].here:
            return None
        words = self.in_a_subshell(node.plain, one)
        return words if words and words[0] in self.state.functions else None

    def function_output(self, words: list[str]) -> str | None:
        """The output of ``$(f ARGS)`` (``words``), or None when it is only known at run
        time."""
        plain = _prints_plainly(self.state.functions[words[0]])
        saved = (self.state, self.commands, self.blind, self.printed, self.printing_when)
        self.state, self.commands, self.blind = self.state.copy(), [], []
        self.printed, self.printing_when = ([] if plain else None), self.state.when
        try:
            with contextlib.suppress(_Stop, _Jump), self.subshell():  # exit ends it
                self.call(words[0], words[1:], {})
            printed, ran, blind = self.printed, self.commands, self.blind
        finally:
            self.state, self.commands, self.blind, self.printed, self.printing_when = saved
        # the commands it runs do run, in a subshell: a server it starts in the background
        # (PID=$(start_server ...), its output sent to a log) goes on serving; once for a
        # command whose words are expanded more than once
        if (self.running, tuple(words)) not in self.substituted_runs:
            self.substituted_runs.add((self.running, tuple(words)))
            self.commands.extend(ran)
        if printed is None or ran or blind or None in printed:
            return None
        return "".join(t for t in printed if t is not None).rstrip("\n")

    def echo(self, words: list[str], known: bool) -> None:
        """``echo``/``printf`` run: what it prints, when a function's output is read."""
        if self.printed is None:
            return
        if not known or self.state.when != self.printing_when:
            self.printed.append(None)
        elif words[0] == "printf":
            printed = printf(words[1], words[2:], self.dialect == "bash") if words[1:] else None
            self.printed.append(printed)
        else:
            self.printed.append(self.echoed(words[1:]))

    def printf_to(self, words: list[str], known: bool, line: int | None) -> bool:
        """bash's ``printf -v NAME FORMAT ARGS``: NAME set to what it would print, when
        kvconfig computes it (``kvconfig.load.shell.printf``); False otherwise."""
        rest = words[3:] if words[3:4] != ["--"] else words[4:]
        name = words[2] if len(words) > 2 else ""
        if self.dialect != "bash" or not known or not rest or name in self.state.arrays:
            return False
        value = printf(rest[0], rest[1:], bash=True)
        if value is None or not re.fullmatch(r"[A-Za-z_]\w*", name) or self.is_map(name):
            return False
        self.assign(name, value, f"printf -v on line {line}")
        return True

    def echoed(self, args: list[str]) -> str | None:
        newline, escapes = True, self.dialect != "bash"
        if self.dialect == "bash":
            while args and re.fullmatch(r"-[neE]+", args[0]):
                for flag in args.pop(0)[1:]:
                    newline = newline and flag != "n"
                    escapes = flag == "e" if flag in "eE" else escapes
        elif args[:1] == ["-n"]:
            args, newline = args[1:], False
        text = " ".join(args)
        if escapes and "\\" in text:
            return None
        return text + "\n" * newline


def _prints_plainly(body: object) -> bool:
    """No redirection of output, no pipe and no background command anywhere in ``body``."""
    if isinstance(body, _Word):
        return not body.stdout
    if isinstance(body, N.Pipeline) and len(body.commands) > 1:
        return False
    if isinstance(body, N.Sequence) and any(background for _, background in body.items):
        return False
    if isinstance(body, list | tuple):
        return all(_prints_plainly(item) for item in body)
    if dataclasses.is_dataclass(body) and not isinstance(body, type):
        return all(_prints_plainly(getattr(body, f.name)) for f in dataclasses.fields(body))
    return True


_CLASSES = {
    "space": " \t\n\r\v\f",
    "blank": " \t",
    "digit": "0123456789",
    "lower": "abcdefghijklmnopqrstuvwxyz",
    "upper": "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
    "alpha": "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
    "alnum": "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "v": "\v", "f": "\f"}


def translate(args: list[str], text: str) -> str | None:
    """``tr -d SET`` or ``tr SET1 SET2`` on ``text`` as POSIX ``tr`` reads its sets
    (characters, ``a-z`` ranges, ``[:space:]``-style classes, backslash escapes; a short
    SET2 is padded with its last character, as GNU's does); None for what is not that
    (other options, ``[x*n]``, the case classes in SET2)."""
    if len(args) == 2 and args[0] == "-d":
        chars = _set(args[1])
        return None if chars is None else "".join(c for c in text if c not in chars)
    if len(args) != 2 or args[0].startswith("-"):
        return None
    one, two = _set(args[0]), _set(args[1])
    if one is None or not two or ("[:" in args[1] and args[1] not in ("[:lower:]", "[:upper:]")):
        return None
    two = two + two[-1] * (len(one) - len(two))
    return text.translate(str.maketrans(one, two[: len(one)]))


_CLASS = re.compile(r"\[:([a-z]+):\]")
_REPEAT = re.compile(r"\[.\*\d*\]|\[=.=\]")
MAX_SET = 65536
"""Most characters kvconfig expands a ``tr`` set to (``\\000-\\377`` is 256)."""


def _set(spec: str) -> str | None:
    out: list[str] = []
    size = 0
    k = 0
    while k < len(spec):
        if size > MAX_SET:
            return None
        m = _CLASS.match(spec, k)
        if m:
            if m.group(1) not in _CLASSES:
                return None
            out.append(_CLASSES[m.group(1)])
            size += len(out[-1])
            k = m.end()
            continue
        if spec[k] == "[" and _REPEAT.match(spec, k):
            return None
        c, k = _char(spec, k)
        if c is None:
            return None
        if spec[k : k + 1] == "-" and k + 1 < len(spec):
            end, k = _char(spec, k + 1)
            if end is None or end < c or ord(end) - ord(c) > MAX_SET:
                return None
            out.append("".join(chr(n) for n in range(ord(c), ord(end) + 1)))
            size += len(out[-1])
            continue
        out.append(c)
        size += 1
    return "".join(out) if size <= MAX_SET else None


def _char(spec: str, k: int) -> tuple[str | None, int]:
    if spec[k] != "\\":
        return spec[k], k + 1
    if k + 1 >= len(spec):
        return "\\", k + 1
    if spec[k + 1] in _ESCAPES:
        return _ESCAPES[spec[k + 1]], k + 2
    if spec[k + 1] in "01234567":
        return None, k + 2
    return spec[k + 1], k + 2


_READ = frozenset({"echo", "printf", "sed", "cat", "cd", "pwd"}) | PROGRAMS
"""The programs whose output ``$(...)`` kvconfig computes (with functions and Python)."""
_PYTHON_NAME = re.compile(r"(?:.*/)?python[0-9.]*")


def _never_read(node: N.Simple, functions: Mapping[str, object]) -> bool:
    """Whether ``$(node)`` runs a program whose output kvconfig never computes (``date``,
    ``curl``, ``nproc``): its first word plain text naming no function, no program of
    ``_READ`` and no Python; then nothing of it need be expanded."""
    if node.opaque or not node.words or any(p.kind != "lit" for p in node.words[0].parts):
        return False
    head = "".join(p.text for p in node.words[0].parts)
    if not head or "=" in head or head in functions or head in _READ:
        return False
    return not _PYTHON_NAME.fullmatch(head)
