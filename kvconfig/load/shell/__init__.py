"""One shell: what a ``sh -c`` / ``bash -c`` script runs, decided as bash and dash decide.

Operators keep vLLM's arguments in scripts like::

    if [ "$PROFILE" = throughput ]; then BS=128; else BS=64; fi
    exec numactl --cpunodebind=0 vllm serve "$MODEL" --block-size $BS 2>&1 | tee /tmp/log

kvconfig reads such a script without running it. ``words``, ``quoting`` and ``lexer``
split it into words and operators, ``parser`` builds the commands, and ``script`` runs
the evaluator, one layer a module: ``state`` (what a script has set),
``variables``, ``maps`` (array subscripts, bash's associative arrays), ``params`` and
``globs`` (expansions), ``fields`` (field splitting),
``conditions`` (``test``), ``arith`` (``$(( ))``), ``control`` (if, case, pipelines),
``loops`` (loops, and a compound command's fed input), ``jumps`` (``return``, ``break``,
``continue`` on one side of a run-time choice), ``scope`` (declarations, functions,
``eval``, ``read``, whose input ``read_input`` takes apart), ``dirs`` (the working folder:
``cd``, ``pwd``, ``$PWD``), ``files`` and ``paths`` (what a launch script reads here:
``$0``, ``dirname``/``readlink`` in ``$(...)``, ``source``, ``bash FILE``), ``output``
(what ``$(...)`` prints; ``pyprint`` and ``pyvalues`` read a short Python program's
``print``, run by nothing), ``regex``
(bash's ``=~``), ``dbracket`` (``[[ ]]``) and ``simple`` (one command, builtins and
nested shells). It covers quotes (single, double, bash's ``$'...'``), escapes and
continuations, here-documents, redirections, ``if``/``elif``/``else``, ``case``,
``for``/``while``/``until``, ``&&``/``||``, ``!``, ``[ ]``/``test``, functions, ``set
--``/``shift``, ``export``/``readonly``/``declare``/``local``, subshell and pipeline
scope, bash arrays (associative ones too), ``~``, the parameter expansions, ``$(( ))``,
``eval``, nested ``sh -c`` and ``bash FILE`` and the wrappers that run a program
(``wrappers``), and bash's
brace expansion (``braces``), ``[[ == ]]`` on strings, ``[[ =~ ]]``, ``[[ A && B || C
]]``, ``for (( ; ; ))`` and process substitution.
What the shell decides from values kvconfig knows, kvconfig decides the same way; what
depends on a value it cannot know (a Secret, ``$(...)``, a file test) is only known at
run time and stays unknown. ``tests/test_shell_differential.py`` holds it to real bash
and dash.

``servers`` picks the vLLM servers a script starts: every one started in the background
(``&``, a ``for`` loop) runs; alternatives chosen at run time are one server whose
differing words are only known at run time.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import replace

from kvconfig.load.shell.script import Command


def servers(
    cmds: Sequence[Command], is_server: Callable[[Command], bool]
) -> tuple[list[Command], str]:
    """(the server commands that run, why kvconfig cannot tell which run: "" when it can)."""
    found = [c for c in cmds if is_server(c)]
    if len(found) <= 1:
        return found, ""
    exclusive = any(_exclusive(a, b) for k, a in enumerate(found) for b in found[k + 1 :])
    if exclusive:
        groups = _alternatives(found)
        merged = [_merge(g) for g in groups] if groups is not None else [None]
        if None in merged:
            lines = _lines(found)
            return found, (
                f"which of the vLLM commands ({lines}) runs depends on values only known at "
                "run time"
            )
        found = [m for m in merged if m is not None]
        if len(found) == 1:
            return found, ""
    blocking = [c for c in found[:-1] if not c.background]
    if blocking:
        lines = _lines(found)
        return found, (
            f"two vLLM commands run one after the other ({lines}); the second starts "
            "only when the first exits"
        )
    return found, ""


def _lines(found: Sequence[Command]) -> str:
    lines = sorted({c.line for c in found if c.line is not None})
    if not lines:
        return "in one script"
    return ("line " if len(lines) == 1 else "lines ") + ", ".join(map(str, lines))


def _exclusive(a: Command, b: Command) -> bool:
    """Whether a run-time choice sends the script to one or the other, never both."""
    taken = dict(a.branch)
    return any(choice in taken and taken[choice] != k for choice, k in b.branch)


def _alternatives(found: Sequence[Command]) -> list[list[Command]] | None:
    """The commands as groups of alternatives: each one's commands exclusive of each
    other and of no other group's (the sides of each ``eval`` of a text a run-time choice
    made: each eval starts one of its own). None when they are not so (two servers on
    one side of a choice, one on the other)."""
    groups: list[list[Command]] = []
    for c in found:
        home = next((g for g in groups if all(_exclusive(c, o) for o in g)), None)
        if home is None:
            groups.append([c])
        else:
            home.append(c)
    for k, g in enumerate(groups):
        others = [o for h in groups[:k] + groups[k + 1 :] for o in h]
        if any(_exclusive(c, o) for c in g for o in others):
            return None
    return groups


def _merge(found: Sequence[Command]) -> Command | None:
    """Alternatives that differ only in some words: one command, those words unknown (a
    program named alike on every side, ``/venv/bin/vllm`` or ``vllm``, is that program)."""
    first = found[0]
    if len(found) == 1:
        return first
    names = {os.path.basename(c.words[0]) for c in found if c.words}
    if len(names) != 1 or any(
        len(c.words) != len(first.words) or c.words[1:2] != first.words[1:2] for c in found
    ):
        return None
    found = [replace(c, words=first.words[:1] + c.words[1:]) for c in found]
    unknown = dict(first.unknown)
    words = list(first.words)
    for c in found[1:]:
        unknown.update(dict(c.unknown))
    for i in range(len(words)):
        choices = sorted({c.words[i] for c in found})
        if len(choices) > 1:
            if any(w.startswith("-") for w in choices):
                return None
            words[i] = " or ".join(choices)
            unknown[i] = words[i]
    env = {k: v if all(c.env.get(k) == v for c in found) else None for k, v in first.env.items()}
    common = [w for w in first.when if all(w in c.when for c in found)]
    return Command(
        tuple(words),
        env,
        tuple(sorted(unknown.items())),
        first.line,
        first.background,
        tuple(common),
        (),
        all(c.replaces for c in found),
        next((c.rounds for c in found if c.rounds), ""),
    )
