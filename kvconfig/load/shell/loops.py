"""Loops (``for``, bash's ``for (( ))``, ``while``/``until``) and the input a compound
command is fed (``while read ...; done <<< TEXT``).

Each loop is a frame (``kvconfig.load.shell.jumps``): a side of a run-time choice in its
body that takes ``break`` or ``continue`` rejoins the others at the loop's end or its next
round. A compound command's here-string or here-document is its input for every command
in it that reads one: each ``read`` takes its next line (bash ``builtins/read.def``, dash
``readcmd``), and a program that may read its input leaves what is left of it only known
at run time. A program started with ``&`` reads none of it: the shell gives it
``/dev/null`` (POSIX, "Asynchronous Lists", without job control), and neither does one
whose own redirection gives it another input, nor a program known not to read it
(``READS_NO_INPUT``).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from kvconfig.errors import InputError
from kvconfig.errors import ScriptJumps as _Jump
from kvconfig.errors import ScriptStops as _Stop
from kvconfig.load.shell import nodes as N
from kvconfig.load.shell.arith import arith_value, surely_refused
from kvconfig.load.shell.control import _Control, cond_line, node_line
from kvconfig.load.shell.jumps import Frame, join
from kvconfig.load.shell.state import MAX_LOOP, _State
from kvconfig.load.shell.words import _Word, hole_what

READS_NO_INPUT = frozenset(
    {"vllm", "sleep", "kill", "seq", "mkdir", "rm", "cp", "mv", "ln", "touch", "date"}
    | {"nvidia-smi", "chmod", "basename", "dirname", "realpath", "readlink", "nproc"}
)
"""Programs that never read their input as launch scripts run them: ``vllm serve`` and
``vllm bench`` (not ``vllm chat``/``complete``, which read it), and core utilities that
take their operands from their arguments. ``curl`` reads it only for ``@-``, ``-T -``
or ``-K -`` (curl's manual)."""


class _Loops(_Control):
    departed = False
    """In the last loop round run, a side of a run-time choice left the loop's frame."""

    def run_loop(self, node: N.Loop | N.For | N.ArithFor) -> int | None:
        if isinstance(node, N.For):
            return self.within("loop", lambda: self.run_for(node))
        if isinstance(node, N.ArithFor):
            return self.within("loop", lambda: self.run_arith_for(node))
        return self.within("loop", lambda: self.run_while(node))

    def within(self, kind: str, run: Callable[[], int | None]) -> int | None:
        """Run ``run`` as a frame of ``kind`` (``function``: a call or a sourced file,
        which ``return`` ends; ``loop``), then join the sides of run-time choices in it
        that left to its end."""
        frame = Frame(kind)
        self.frames.append(frame)
        try:
            try:
                status = run()
                ends = [] if frame.broke else [self.state]
            except _Jump as jump:
                if kind != "function" or jump.kind != "return":
                    raise
                status, ends = jump.status, [self.state]
            except _Stop:
                if not frame.left:
                    raise
                status, ends = None, []
        finally:
            self.frames.pop()
        if frame.left:
            states = [*ends, *(state for _, state in frame.left)]
            self.state = join(states, f"a {frame.left[0][0]} taken on one side of a choice")
            status = None
        return status

    def run_fed(self, node: N.Fed) -> int | None:
        """A compound command fed a here-string or here-document: expanded by the shell
        itself, then the input of what runs in it."""
        text, what = self.here_text(node.word, None)
        outer = self.state.input
        self.state.input = (text, what or "the input")
        try:
            return self.run_node(node.body)
        finally:
            self.state.input = outer

    def here_text(self, word: _Word, head: str | None) -> tuple[str | None, str]:
        """The text a here-string or here-document gives ``head`` (None: a compound
        command) (``kvconfig.load.shell.scope``)."""
        raise NotImplementedError

    def input_read(self, words: list[str], background: bool, own: bool) -> None:
        """A program run now: when it may read the fed input, what is left of it is only
        known at run time."""
        fed = self.state.input
        if fed is None or fed[0] == "" or background or own or not words:
            return
        name = words[0].rpartition("/")[2]
        chat = name == "vllm" and words[1:2] in (["chat"], ["complete"])
        if name in READS_NO_INPUT and not chat:
            return
        if name == "curl" and not _curl_reads(words[1:]):
            return
        self.state.input = (None, f"the input {name} may read")

    def run_for(self, node: N.For) -> int | None:
        items: list[str] | None = []
        if node.words is None:
            args = self.state.args
            items = None if args is None else list(args[1:])
            if any(hole_what(a) is not None for a in items or []):
                items = None  # a function's argument only known at run time
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

            return self.some_rounds([once, None], node.body, reason)
        status: int | None = 0
        last: object = None
        items = items[:MAX_LOOP]
        for k, item in enumerate(items):
            self.assign(node.name, item)
            before = len(self.commands)
            status, broke = self.round(node.body)
            if broke:
                return 0
            mark = (_settings(self.state, node.name), [c.words for c in self.commands[before:]])
            if mark == last and not self.mentions(node.body, node.name):
                # the round did what the one before did, from where that one started, and
                # each one left will too (the variable is not read): they run its programs
                # (once more each, or as often as a run-time choice lets the loop go on)
                if not self.departed:
                    self.commands.extend(self.commands[before:] * (len(items) - k - 1))
                self.assign(node.name, items[-1])
                break
            last = mark
        return status

    def widen(
        self, vars_: dict[str, str | None], arrays: dict[str, list[str | None]], why: str
    ) -> None:
        """The variables and arrays that differ from ``vars_`` and ``arrays``: only known
        at run time."""
        st = self.state
        for name in (set(vars_) | set(st.vars)) - st.readonly:
            if st.vars.get(name, "\0") != vars_.get(name, "\0"):
                self.assign(name, None, f"${name} ({why})")
        for name in set(arrays) | set(st.arrays):
            if st.arrays.get(name) != arrays.get(name):
                st.arrays[name] = [None]

    def mentions(self, node: N.Node, name: str) -> bool:
        """Whether ``node``, or a function it may call, may read the variable ``name``."""
        word = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])")
        bodies = [node, *self.state.functions.values()]
        return any(word.search(_text(body)) for body in bodies)

    def run_arith_for(self, node: N.ArithFor) -> int | None:
        """bash's ``for (( init; test; step ))``: init once, then the body and the step
        while the test is not 0 (an empty test is 1), each an arithmetic expression (the
        bash manual, Looping Constructs). A value only known at run time makes the body a
        run-time choice, run once with the variables it assigns unknown; so does a round
        that a side of a run-time choice left further (``return``, ``exit``: a polling
        loop), as how many rounds run is then only known at run time."""
        parts = node.expression.split(";")
        if len(parts) != 3:
            raise InputError(
                f"the for (( )) on line {self.at(node.line)} needs three expressions",
                source=self.source,
                line=self.at(node.line),
                key=self.key,
                hint="write for (( init; test; step ))",
            )
        init, test, step = parts
        names = _assigned(node.expression)
        status: int | None = 0
        if self.arith_effects(init):
            for _ in range(MAX_LOOP):
                tested = self.arith_text(test) if test.strip() else "1"  # empty: 1
                go = None if tested is None else arith_value(tested, self.arith_var)
                if go is None and surely_refused(tested):
                    return 1  # bash: a syntax error ends the loop, status 1
                if go is None:
                    break
                if go == 0:
                    return status
                status, broke = self.round(node.body)
                if broke:
                    return 0
                if not self.departed and surely_refused(self.arith_text(step)):
                    return 1
                if not self.arith_effects(step) or self.departed:
                    break
            else:
                self.blind.append(f"the loop on line {self.at(node.line)} (too many rounds)")
                raise _Stop
        reason = self.reason(node.line, "the test of the for (( )) loop")

        def unknown() -> None:
            for name in names:
                self.assign(name, None, reason)

        return self.some_rounds([unknown, None], node.body, reason)

    def arith_text(self, text: str) -> str | None:
        """An arithmetic expression of ``for (( ))`` after the expansions bash applies to
        it each time it is evaluated (parameters, ``${#A[@]}``, command substitutions, as
        between double quotes); None when one is only known at run time."""
        if "$" not in text and "`" not in text:
            return text
        value, _what = self.expand_inner(text, True)
        return value

    def arith_effects(self, text: str) -> bool:
        """Run ``NAME=E``, ``NAME op= E``, ``NAME++``, ``++NAME`` (comma-separated) or an
        expression without effect, after its expansions; False when a value is only known
        at run time."""
        return self.arith_run(text) is not None

    def arith_run(self, text: str) -> int | None:
        """``arith_effects``, giving the value of the last expression (0 for none; a
        ``NAME++`` is the value before, a ``++NAME`` the value after), None when a value is
        only known at run time."""
        expanded = self.arith_text(text)
        if expanded is None:
            return None
        last = 0
        for raw in expanded.split(","):
            item = raw.strip()
            if not item:
                continue
            m = re.fullmatch(r"(\+\+|--)\s*([A-Za-z_]\w*)|([A-Za-z_]\w*)\s*(\+\+|--)", item)
            if m:
                name = m.group(2) or m.group(3)
                op = m.group(1) or m.group(4)
                expr = f"{name} {op[0]} 1"
                before = arith_value(name, self.arith_var) if m.group(3) else None
            else:
                m = re.fullmatch(r"([A-Za-z_]\w*)\s*([-+*/%]?)=(?!=)(.*)", item, re.S)
                if m is None:
                    value = arith_value(item, self.arith_var)
                    if value is None:
                        return None
                    last = value
                    continue
                name, op, rhs = m.group(1), m.group(2), m.group(3)
                expr = f"{name} {op} ({rhs})" if op else rhs
                before = None
            value = arith_value(expr, self.arith_var)
            if value is None:
                return None
            self.assign(name, str(value))
            last = value if before is None else before
        return last

    def arith_command(self, text: str) -> int | None:
        """bash's ``(( expression ))``: its effects, and status 0 when the value is not 0,
        else 1 (the bash manual, Compound Commands); a value only known at run time leaves
        the status and every variable it assigns to run time."""
        value = self.arith_run(text)
        if value is not None:
            return 0 if value else 1
        for name in _assigned(text):
            self.assign(name, None, f"(({text}))")
        self.last_unknown = f"(({text}))"
        return None

    def round(self, body: N.Node) -> tuple[int | None, bool]:
        """One round of a loop's body: (its status, whether ``break`` left the loop). A
        ``break N``/``continue N`` with N > 1 leaves this loop and goes on to the one
        around it; ``return`` leaves the function (bash's manual, "Bourne Shell Builtins").
        The next round starts from every side that reached the body's end or took
        ``continue``; the loop ends when every side left it. When a side left further
        (``return``, ``exit``), what the round changed is only known at run time for the
        rounds after it: how many rounds run is."""
        frame = self.frames[-1]
        here, outer = len(self.frames) - 1, self.landed_at
        self.landed_at = here
        start = (dict(self.state.vars), {k: list(v) for k, v in self.state.arrays.items()})
        status: int | None = 0
        going: list[_State] = []
        try:
            status = self.run_node(body)
            going.append(self.state)
        except _Jump as jump:
            if jump.kind == "return":
                raise
            if jump.count > 1:
                raise _Jump(jump.kind, jump.count - 1) from None
            if jump.kind == "break":
                frame.left.append(("break", self.state))
            else:
                going.append(self.state)
        except _Stop:
            status = None
        finally:
            further, self.landed_at = self.landed_at < here, min(outer, self.landed_at)
        going += frame.take("continue")
        if going:
            reason = self.reason(node_line(body), "the loop's round")
            self.state = join(going, reason)
            self.departed = further
            if further:
                self.widen(*start, f"the rounds of the loop on line {self.at(node_line(body))}")
            return (status if len(going) == 1 else None), False
        if not frame.left:
            raise _Stop
        frame.broke = True
        return 0, True

    def run_while(self, node: N.Loop) -> int | None:
        seen: list[tuple[dict[str, str | None], int]] = []
        status: int | None = 0
        for _ in range(MAX_LOOP):
            self.last_unknown = ""
            with self.testing():
                cond = self.run_node(node.condition)
            if cond is not None:
                go = (cond == 0) != node.until
                if not go:
                    return status
                before, frame = len(self.commands), self.frames[-1]
                start = (dict(self.state.vars), {k: list(v) for k, v in self.state.arrays.items()})
                left = len(frame.left)
                status, broke = self.round(node.body)
                if broke:
                    return 0
                if len(frame.left) > left:  # a polling loop: a run-time answer may end it
                    # after any round, so what its rounds change is only known at run time
                    self.widen(*start, f"the rounds of the loop on line {self.at(node.line)}")
                mark = (dict(self.state.vars), len(self.commands) - before)
                if mark in seen:  # the loop repeats itself: it never ends on its own
                    del self.commands[before:]
                    raise _Stop
                if len(seen) == MAX_LOOP - 1:
                    self.blind.append(f"the loop on line {self.at(node.line)} (too many rounds)")
                seen.append(mark)
                continue
            reason = self.reason(cond_line(node.condition, node.line), "the loop test")
            return self.some_rounds(None, node.body, reason)
        self.blind.append(f"the loop on line {self.at(node.line)} (too many rounds)")
        raise _Stop


def _curl_reads(args: list[str]) -> bool:
    for k, arg in enumerate(args):
        takes = arg in ("-T", "--upload-file", "-K", "--config")
        if "@-" in arg or (takes and args[k + 1 : k + 2] == ["-"]):
            return True
    return False


def _settings(state: _State, but: str) -> tuple[object, ...]:
    """What a round of a loop over ``but`` may read of ``state``."""
    vars_ = {k: v for k, v in state.vars.items() if k != but}
    return (vars_, state.arrays, state.exported, state.maybe_exported, state.readonly,
            state.functions, state.args, state.cwd, state.templates, state.programs,
            state.input, state.nocase)  # fmt: skip


_TEXTS: dict[int, tuple[N.Node, str]] = {}


def _text(node: N.Node) -> str:
    """``node`` as text, every word in it (not the names of loops and functions), once."""
    kept = _TEXTS.get(id(node))
    if kept is None or kept[0] is not node:
        if len(_TEXTS) > 4096:
            _TEXTS.clear()
        kept = _TEXTS[id(node)] = (node, re.sub(r"name='[^']*'", "", repr(node)))
    return kept[1]


def _assigned(text: str) -> list[str]:
    """The names an arithmetic expression assigns (``N=``, ``N+=``, ``N++``, ``++N``)."""
    names = re.findall(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:[-+*/%]?=(?!=)|\+\+|--)", text)
    return names + re.findall(r"(?:\+\+|--)\s*([A-Za-z_][A-Za-z0-9_]*)", text)
