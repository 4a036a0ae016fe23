"""Control flow: sequences, ``&&``/``||``, pipelines and subshells (their state does not
reach the script), ``if``, ``case``, ``for``, ``while``/``until``, function definitions,
and ``fork``, which runs each alternative of a choice only known at run time on its own
copy of the state and keeps what they agree on. Simple commands are run by the subclass
(``simple``).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Sequence

from kvconfig.errors import InputError
from kvconfig.errors import ScriptJumps as _Jump
from kvconfig.errors import ScriptStops as _Stop
from kvconfig.load.shell import nodes as N
from kvconfig.load.shell.arith import arith_value
from kvconfig.load.shell.fields import _Fields
from kvconfig.load.shell.state import MAX_LOOP, MAX_STEPS, _merge, _State
from kvconfig.load.shell.words import _Part, _Word, hole_what


class _Control(_Fields):
    deferring = False
    """Whether a ``cd`` may leave its change to the and-or list it starts (``dirs``)."""
    pending: Callable[[], None] | None = None
    """That change: made on the side of the list where the ``cd`` succeeded."""

    backgrounded = 0
    """How many commands ended by ``&`` the one running now is inside."""

    def simple(self, node: N.Simple, background: bool = False) -> int | None:
        """Run one simple command (``kvconfig.load.shell.simple``)."""
        raise NotImplementedError

    # ----- running ------------------------------------------------------------------------
    def run_node(self, node: N.Node) -> int | None:
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
        if isinstance(node, N.Sequence):
            status: int | None = 0
            for item, background in node.items:
                if background:  # a subshell the script does not wait for: a pipeline, a
                    saved = self.state  # function, a group: every program in it too
                    self.state = saved.copy()
                    self.backgrounded += 1
                    try:
                        with contextlib.suppress(_Stop):
                            self.run_node(item)
                    finally:
                        self.backgrounded -= 1
                    self.state = saved
                    status = 0
                else:
                    status = self.run_node(item)
                self.state.status = status
            return status
        if isinstance(node, N.Simple):
            status = self.simple(node)
        elif isinstance(node, N.AndOr):
            self.deferring = isinstance(node.first, N.Simple)
            try:
                status = self.run_node(node.first)
            finally:
                self.deferring = False
            went, self.pending = self.pending, None
            for k, (op, nxt) in enumerate(node.rest):
                self.state.status = status
                if status is None:
                    # each way the status goes, the rest of the list runs on from there (a
                    # cd in it, cd A && cd B && ..., carries its folder to what follows)
                    reason = self.reason(node_line(node.first), "the status of the command")
                    order = [went, None] if op == "&&" else [None, went]
                    runs = N.AndOr(nxt, node.rest[k + 1 :])
                    skips = N.AndOr(_STATUS[op == "&&"], node.rest[k + 1 :])
                    status = self.fork([[runs], [skips]], reason, self.run_node, order)
                    break
                if (status == 0) == (op == "&&"):
                    status = self.run_node(nxt)
        elif isinstance(node, N.Pipeline):
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
        elif isinstance(node, N.Group):
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
        elif isinstance(node, N.If):
            status = self.run_if(node, 0)
        elif isinstance(node, N.Case):
            status = self.run_case(node)
        elif isinstance(node, N.For):
            status = self.run_for(node)
        elif isinstance(node, N.Loop):
            status = self.run_loop(node)
        elif isinstance(node, N.ArithFor):
            status = self.run_arith_for(node)
        elif isinstance(node, N.Function):
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
        alternatives: Sequence[Sequence[object]],
        reason: str,
        run: object,
        before: Sequence[object] | None = None,
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

    def run_if(self, node: N.If, k: int) -> int | None:
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

    def run_case(self, node: N.Case) -> int | None:
        subject, what = self.expand_string(node.word)
        return self.case_from(node, 0, subject, what)

    def case_from(self, node: N.Case, k: int, subject: str | None, what: str) -> int | None:
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

            return self.fork([[node.body], []], reason, self.loop_body, [once, None])
        status: int | None = 0
        for item in items[:MAX_LOOP]:
            self.assign(node.name, item)
            status, broke = self.round(node.body)
            if broke:
                return 0
        return status

    def run_arith_for(self, node: N.ArithFor) -> int | None:
        """bash's ``for (( init; test; step ))``: init once, then the body and the step
        while the test is not 0 (an empty test is 1), each an arithmetic expression (the
        bash manual, Looping Constructs). A value only known at run time makes the body a
        run-time choice, run once with the variables it assigns unknown."""
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
        names = re.findall(
            r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:[-+*/%]?=(?!=)|\+\+|--)", node.expression
        )
        names += re.findall(r"(?:\+\+|--)\s*([A-Za-z_][A-Za-z0-9_]*)", node.expression)
        status: int | None = 0
        if self.arith_effects(init):
            for _ in range(MAX_LOOP):
                go = arith_value(test, self.arith_var) if test.strip() else 1
                if go is None:
                    break
                if go == 0:
                    return status
                status, broke = self.round(node.body)
                if broke:
                    return 0
                if not self.arith_effects(step):
                    break
            else:
                self.blind.append(f"the loop on line {self.at(node.line)} (too many rounds)")
                raise _Stop
        reason = self.reason(node.line, "the test of the for (( )) loop")

        def unknown() -> None:
            for name in names:
                self.assign(name, None, reason)

        return self.fork([[node.body], []], reason, self.loop_body, [unknown, None])

    def arith_effects(self, text: str) -> bool:
        """Run ``NAME=E``, ``NAME op= E``, ``NAME++``, ``++NAME`` (comma-separated) or an
        expression without effect; False when a value is only known at run time."""
        for raw in text.split(","):
            item = raw.strip()
            if not item:
                continue
            m = re.fullmatch(r"(\+\+|--)\s*([A-Za-z_]\w*)|([A-Za-z_]\w*)\s*(\+\+|--)", item)
            if m:
                name = m.group(2) or m.group(3)
                op = m.group(1) or m.group(4)
                expr = f"{name} {op[0]} 1"
            else:
                m = re.fullmatch(r"([A-Za-z_]\w*)\s*([-+*/%]?)=(?!=)(.*)", item, re.S)
                if m is None:
                    if arith_value(item, self.arith_var) is None:
                        return False
                    continue
                name, op, rhs = m.group(1), m.group(2), m.group(3)
                expr = f"{name} {op} ({rhs})" if op else rhs
            value = arith_value(expr, self.arith_var)
            if value is None:
                return False
            self.assign(name, str(value))
        return True

    def round(self, body: N.Node) -> tuple[int | None, bool]:
        """One round of a loop's body: (its status, whether ``break`` left the loop). A
        ``break N``/``continue N`` with N > 1 leaves this loop and goes on to the one
        around it; ``return`` leaves the function (bash's manual, "Bourne Shell Builtins")."""
        try:
            return self.run_node(body), False
        except _Jump as jump:
            if jump.kind == "return":
                raise
            if jump.count > 1:
                raise _Jump(jump.kind, jump.count - 1) from None
            return 0, jump.kind == "break"

    def loop_body(self, body: N.Node) -> int | None:
        try:
            return self.run_node(body)
        except _Jump:
            return None

    def run_loop(self, node: N.Loop) -> int | None:
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
                status, broke = self.round(node.body)
                if broke:
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


def node_line(node: N.Node) -> int:
    line = getattr(node, "line", None)
    if isinstance(line, int):
        return line
    if isinstance(node, N.AndOr):
        return node_line(node.first)
    if isinstance(node, N.Sequence) and node.items:
        return node_line(node.items[0][0])
    return 1


def cond_line(cond: N.Sequence, default: int) -> int:
    return node_line(cond) if cond.items else default


_STATUS = {
    ok: N.Simple([_Word([_Part("false" if ok else "true", False, "lit")])], 0)
    for ok in (True, False)
}
"""A command whose status is the one that skips the next command of an and-or list
(``&&`` after a failure: ``false``; ``||`` after a success: ``true``)."""
