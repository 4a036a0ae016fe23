"""The evaluator's limits, the commands it finds and the shell state it carries.

``Command`` is one program a script runs; ``_State`` is what a script has set so far
(variables, exports, arguments, arrays, functions, the run-time choices above it, the
known text of partly run-time values), copied
for subshells and for each branch of a choice only known at run time, and ``_merge``
keeps what the branches agree on.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from kvconfig.load.shell import nodes as N

MAX_EVAL_DEPTH = 8
"""Deepest nesting of ``eval``, ``sh -c`` and function calls kvconfig follows."""

MAX_STEPS = 20000
"""Most commands kvconfig evaluates in one script (loops included)."""

MAX_SCRIPT_BYTES = 256 * 1024
"""Longest script kvconfig reads, a sourced file's included (launch scripts are a few KiB)."""

MAX_TEMPLATE = 64 * 1024
"""Longest known text of a partly run-time value kvconfig keeps for ``eval``."""

MAX_TEXTS = 8
"""Most texts kvconfig keeps for a partly run-time value (one per run-time choice's side)."""

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
    rounds: str = ""
    """Why how often it runs is only known at run time: it is in a loop whose rounds
    depend on a run-time value (empty: once each time the script reaches it)."""


@dataclass
class _State:
    vars: dict[str, str | None]
    exported: set[str]
    args: list[str] | None
    arrays: dict[str, list[str | None]] = field(default_factory=dict)
    readonly: set[str] = field(default_factory=set)
    functions: dict[str, N.Node] = field(default_factory=dict)
    when: tuple[str, ...] = ()
    branch: tuple[tuple[int, int], ...] = ()
    why: dict[str, str] = field(default_factory=dict)
    status: int | None = 0
    maybe_exported: set[str] = field(default_factory=set)
    nocase: bool = False
    """``shopt -s nocasematch`` may be in force: ``[[ == ]]`` then matches case apart."""
    programs: dict[str, str] = field(default_factory=dict)
    """Variables only known at run time that name one program: ``X=$(command -v vllm)``,
    or set to ``/venv/bin/vllm`` on one side of a run-time choice and so on the other
    (name: the program's name)."""
    cwd: str | None = None
    """The current folder (``kvconfig.load.shell.dirs``); None: only known at run time."""
    templates: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Variables only known at run time whose text is known but for some parts, each such
    part marked (``kvconfig.load.shell.words.hole``): what ``eval`` reads. One text per
    value a run-time choice above may have given it (``_merge``)."""
    input: tuple[str | None, str] | None = None
    """What is left of the input a compound command is fed (``done <<< TEXT``,
    ``kvconfig.load.shell.loops``): its text, None when only known at run time, and what
    made it so; None when ``read`` takes the script's own input."""
    nounset: bool = False
    """``set -u`` (``set -o nounset``) is in force: expanding an unset parameter is an
    error that ends a non-interactive shell (POSIX 2.14 ``set -u``)."""
    errexit: bool = False
    """``set -e`` (``set -o errexit``) is in force: a command that fails outside a test
    ends the shell (POSIX 2.14 ``set -e``)."""

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
            self.nocase,
            dict(self.programs),
            self.cwd,
            dict(self.templates),
            self.input,
            self.nounset,
            self.errexit,
        )


def _merge(merged: _State, ends: list[_State], reason: str) -> None:
    first = ends[0].vars
    if all(e.vars == first for e in ends[1:]):  # the sides set the same: their values
        merged.vars = dict(first)
        merged.why.update({n: ends[0].why.get(n, "$" + n) for n, v in first.items() if v is None})
        names: set[str] = set(first)
    else:
        names = _merge_vars(merged, ends, reason)
    _merge_rest(merged, ends, reason, names)


def _merge_vars(merged: _State, ends: list[_State], reason: str) -> set[str]:
    names = set().union(*(set(e.vars) for e in ends)) | set(merged.vars)
    first, rest = ends[0].vars, [e.vars for e in ends[1:]]
    for name in names:
        value = first.get(name, "\0unset")
        if all(other.get(name, "\0unset") == value for other in rest):
            if value == "\0unset":
                merged.vars.pop(name, None)
            else:
                merged.vars[name] = value
                if value is None:
                    merged.why[name] = ends[0].why.get(name, "$" + name)
        else:
            merged.vars[name] = None
            merged.why[name] = f"${name} (set by {reason})"
    return names


def _merge_rest(merged: _State, ends: list[_State], reason: str, names: set[str]) -> None:
    first, rest = ends[0], ends[1:]
    if all(e.arrays == first.arrays for e in rest):  # the sides hold the same arrays
        merged.arrays.update({name: list(values) for name, values in first.arrays.items()})
    else:
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
    merged.nocase = merged.nocase or any(e.nocase for e in ends)
    merged.nounset = all(e.nounset for e in ends)  # on one side only: no error assumed
    merged.errexit = all(e.errexit for e in ends)
    folders = {e.cwd for e in ends}
    merged.cwd = folders.pop() if len(folders) == 1 else None
    merged.programs = {}
    merged.templates = {}
    agree = all(
        e.vars == first.vars and e.programs == first.programs and e.templates == first.templates
        for e in rest
    )
    if agree:  # the sides agree on every variable: the run-time ones keep what they hold
        run_time = [n for n, value in first.vars.items() if value is None]
        merged.programs = {
            n: first.programs[n] for n in run_time if first.programs.get(n) is not None
        }
        merged.templates = {n: first.templates[n] for n in run_time if first.templates.get(n)}
    for name in [] if agree else [n for n in names if merged.vars.get(n, "") is None]:
        program, texts = first.programs.get(name), first.templates.get(name)
        if first.vars.get(name, "") is None and all(  # the same run-time value on every side
            e.vars.get(name, "") is None
            and e.programs.get(name) == program
            and e.templates.get(name) == texts
            for e in rest
        ):
            if program is not None:
                merged.programs[name] = program
            if texts:
                merged.templates[name] = texts
            continue
        named = {_program(e, name) for e in ends}
        if len(named) == 1 and None not in named:
            merged.programs[name] = named.pop() or ""
        texts = _texts(ends, name)
        if texts:
            merged.templates[name] = texts
    inputs = {e.input for e in ends}
    merged.input = inputs.pop() if len(inputs) == 1 else (None, f"the input ({reason})")
    arg_lists = [e.args for e in ends]
    merged.args = arg_lists[0] if all(a == arg_lists[0] for a in arg_lists) else None
    defined = ends[0].functions
    if all(e.functions.keys() == defined.keys() for e in ends[1:]) and all(
        e.functions[k] is body for e in ends[1:] for k, body in defined.items()
    ):  # the same definitions on every side
        merged.functions = dict(defined)
        return
    for name in sorted(set().union(*(set(e.functions) for e in ends))):
        bodies = {id(e.functions.get(name)): e.functions.get(name) for e in ends}
        merged.functions[name] = _either(name, list(bodies.values()))


def _either(name: str, bodies: list[N.Node | None]) -> N.Node:
    """The function ``name`` after a run-time choice that defined it differently on its
    sides (None: not at all, then calling it runs nothing): each body is one side of a
    choice again when it is called."""
    node = bodies[-1] or N.Sequence()
    for body in reversed(bodies[:-1]):
        test = N.Simple([], 0, f"which definition of {name} holds")
        node = N.If([(N.Sequence([(test, False)]), _seq(body))], _seq(node), 0)
    return node


def _seq(body: N.Node | None) -> N.Sequence:
    if isinstance(body, N.Sequence):
        return body
    return N.Sequence([] if body is None else [(body, False)])


def _texts(ends: list[_State], name: str) -> tuple[str, ...] | None:
    """The texts a variable may hold after a run-time choice, one per distinct value the
    branches gave it (unset: empty); None when a branch left it wholly unknown or there
    are more than ``MAX_TEXTS``."""
    texts: dict[str, None] = {}
    for e in ends:
        value = e.vars.get(name, "")
        known = (value,) if value is not None else e.templates.get(name)
        if known is None:
            return None
        texts.update(dict.fromkeys(known))
    return tuple(texts) if len(texts) <= MAX_TEXTS else None


_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")


def path_program(text: str, *, slash: bool = True) -> str | None:
    """The program a path names: its last part (``/venv/bin/vllm``, ``<run time>/vllm``
    name vllm), when that is a program's name; ``slash``: only a path with a ``/``."""
    _, found, tail = text.rstrip("/").rpartition("/")
    if (slash and not found) or not _NAME.fullmatch(tail):
        return None
    return tail


def _program(state: _State, name: str) -> str | None:
    """The program a variable names on one side of a choice: a known value's
    (``path_program``), or the run-time value's ``programs`` entry."""
    value = state.vars.get(name)
    if value is None:
        return state.programs.get(name)
    return path_program(value, slash=False)
