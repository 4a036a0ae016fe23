"""Control flow: sequences, ``&&``/``||``, pipelines and subshells (their state does not
reach the script), ``if``, ``case``, function definitions, and ``fork``, which runs each
alternative of a choice only known at run time on its own copy of the state and keeps
what they agree on. Loops are run by the subclass ``loops``, simple commands by
``simple``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence

from kvconfig.errors import InputError
from kvconfig.errors import ScriptJumps as _Jump
from kvconfig.errors import ScriptStops as _Stop
from kvconfig.load.shell import nodes as N
from kvconfig.load.shell.fields import _Fields
from kvconfig.load.shell.jumps import Frame, landing
from kvconfig.load.shell.state import MAX_STEPS, _merge, _State
from kvconfig.load.shell.words import _Part, _Word


class _Control(_Fields):
    deferring = False
    """Whether a ``cd`` may leave its change to the and-or list it starts (``dirs``)."""
    pending: Callable[[], None] | None = None
    """That change: made on the side of the list where the ``cd`` succeeded."""

    backgrounded = 0
    """How many commands ended by ``&`` the one running now is inside."""
    tested = 0
    """How many tests the command running now is inside (an ``if``/``while``/``until``
    condition, an and-or list's command but the last, a pipeline's command but the last,
    a ``!`` pipeline): ``set -e`` ignores a failure there and in all such a test runs (the
    bash manual, The Set Builtin; POSIX 2.14 ``set -e``)."""

    @contextlib.contextmanager
    def testing(self, exempt: bool = True) -> Iterator[None]:
        """Run a command where ``set -e`` ignores its failure (when ``exempt``)."""
        self.tested += exempt
        try:
            yield
        finally:
            self.tested -= exempt

    rounds = ""
    """Why how many rounds the loop being run goes is only known at run time (empty: it
    is known, or no loop runs): each command run in it is kept with it (``Command``)."""

    landed_at = 0
    """The outermost frame a side of a run-time choice left to in the loop round being
    run (its index in ``frames``; -1: a side ended the script), for ``loops``."""

    ran = 0
    """Simple commands run so far."""
    running = 0
    """The number of the simple command being run (``ran`` when it started)."""

    def simple(self, node: N.Simple, background: bool = False) -> int | None:
        """Run one simple command (``kvconfig.load.shell.simple``)."""
        raise NotImplementedError

    def run_loop(self, node: N.Loop | N.For | N.ArithFor) -> int | None:
        """Run a loop (``kvconfig.load.shell.loops``)."""
        raise NotImplementedError

    def run_fed(self, node: N.Fed) -> int | None:
        """Run a compound command fed a text (``kvconfig.load.shell.loops``)."""
        raise NotImplementedError

    @contextlib.contextmanager
    def subshell(self) -> Iterator[None]:
        """A subshell: a frame no ``return``, ``break`` or ``continue`` leaves."""
        self.frames.append(Frame("subshell"))
        try:
            yield
        finally:
            self.frames.pop()

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
                        with contextlib.suppress(_Stop, _Jump), self.subshell():
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
            outer, self.ran = self.running, self.ran + 1
            self.running = self.ran  # this command, however often its words are expanded
            try:
                status = self.simple(node)
            finally:
                self.running = outer
            if self.state.errexit and not self.tested and status != 0:
                if status is not None:
                    raise _Stop  # set -e: a command that fails outside a test ends the shell
                at = self.at(node.line)
                where = f" on line {at}" if at is not None else ""
                why = f"the status of the command{where} (set -e ends the script where it fails)"
                if why not in self.state.when:  # once, however many rounds run it
                    self.state.when = (*self.state.when, why)
        elif isinstance(node, N.AndOr):
            self.deferring = isinstance(node.first, N.Simple)
            try:
                # (a stand-in for a status already taken, _STATUS, is no command of its own)
                with self.testing(bool(node.rest) or node.first in _STATUS.values()):
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
                    with self.testing(k < len(node.rest) - 1):
                        status = self.run_node(nxt)
        elif isinstance(node, N.Pipeline):
            status = 0
            for k, cmd in enumerate(node.commands):
                saved = self.state
                self.state = saved.copy()
                try:
                    with self.subshell(), self.testing(node.negate or k < len(node.commands) - 1):
                        status = self.run_node(cmd)
                except (_Stop, _Jump):
                    status = None
                self.state = saved
            if node.negate:
                status = None if status is None else int(status == 0)
        elif isinstance(node, N.Group):
            if node.subshell:
                saved = self.state
                self.state = saved.copy()
                try:
                    with self.subshell():
                        status = self.run_node(node.body)
                except (_Stop, _Jump):
                    status = None
                self.state = saved
            else:
                status = self.run_node(node.body)
        elif isinstance(node, N.If):
            status = self.run_if(node, 0)
        elif isinstance(node, N.Case):
            status = self.run_case(node)
        elif isinstance(node, N.For | N.Loop | N.ArithFor):
            status = self.run_loop(node)
        elif isinstance(node, N.Fed):
            status = self.run_fed(node)
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
                self.landed_at = -1
                continue
            except _Jump as jump:  # this side leaves to a function's or loop's end
                frame = landing(self.frames, jump)
                if frame is None:
                    raise
                frame.left.append((jump.kind, self.state))
                at = next(i for i, f in enumerate(self.frames) if f is frame)
                self.landed_at = min(self.landed_at, at)
        if not ends:
            self.state = start
            raise _Stop  # (where a side left to, it goes on: jumps.Frame)
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

    def some_rounds(
        self, before: list[Callable[[], None] | None] | None, body: N.Node, reason: str
    ) -> int | None:
        """A loop whose rounds a run-time value decides: its body run once, on one side of
        a choice (``before`` each side), every program it starts kept with ``reason`` as
        why how often it runs is only known at run time (``Command.rounds``)."""
        outer, self.rounds = self.rounds, self.rounds or reason
        try:
            return self.fork([[body], []], reason, self.loop_body, before)
        finally:
            self.rounds = outer

    def loop_body(self, body: N.Node) -> int | None:
        try:
            return self.run_node(body)
        except _Jump:
            return None

    def run_if(self, node: N.If, k: int) -> int | None:
        if k >= len(node.clauses):
            return self.run_node(node.otherwise) if node.otherwise is not None else 0
        cond, body = node.clauses[k]
        self.last_unknown = ""
        with self.testing():
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
