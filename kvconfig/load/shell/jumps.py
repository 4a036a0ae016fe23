"""Where ``return``, ``break`` and ``continue`` land when only some sides of a run-time
choice take them.

A side of a choice (``control.fork``) that returns from a function or leaves a loop does
not run what follows the choice; the other sides do. What the leaving side had set is
kept with the frame it leaves to (``Frame``: a function call or sourced file for
``return``, a loop for ``break`` and ``continue``) and joined there with the sides that
reach the frame's end (``join``), since bash goes on from that point in either case (the
bash manual, "Bourne Shell Builtins": ``return`` ends the function or sourced file,
``break N`` the Nth enclosing loop, ``continue N`` resumes its next round). A subshell
(``( )``, a pipeline's command, ``&``, ``$( )``, a remote shell) is a frame no jump
leaves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeVar

from kvconfig.errors import ScriptJumps as _Jump
from kvconfig.load.shell.state import _merge, _State


@dataclass
class Frame:
    """A function call, a sourced file (``function``), a loop or a subshell."""

    kind: str
    left: list[tuple[str, _State]] = field(default_factory=list)
    """(``return``/``break``/``continue``, the state of the side that left to here)."""
    broke: bool = False
    """A loop's last round ended in ``break`` on every side: its end state is not one."""

    def take(self, kind: str) -> list[_State]:
        """The states that left to here by ``kind``, no longer kept."""
        taken = [s for k, s in self.left if k == kind]
        self.left = [(k, s) for k, s in self.left if k != kind]
        return taken


def landing(frames: list[Frame], jump: _Jump) -> Frame | None:
    """The frame ``jump`` leaves to: the innermost function for ``return``, the
    ``count``-th enclosing loop for ``break``/``continue`` (the outermost when there are
    fewer); None when a subshell or the script's top is reached first."""
    loops = jump.count
    outermost: Frame | None = None
    for frame in reversed(frames):
        if frame.kind == "subshell":
            break
        if jump.kind == "return":
            if frame.kind == "function":
                return frame
        elif frame.kind == "loop":
            outermost = frame
            loops -= 1
            if loops == 0:
                return frame
    return None if jump.kind == "return" else outermost


def join(states: list[_State], reason: str) -> _State:
    """One state for the sides that reach a point by different ways: the values they
    agree on, the run-time conditions they all have."""
    if len(states) == 1:
        return states[0]
    merged = states[0].copy()
    _merge(merged, states, reason)
    merged.when = _common([s.when for s in states])
    merged.branch = _common([s.branch for s in states])
    return merged


_T = TypeVar("_T")


def _common(tuples: list[tuple[_T, ...]]) -> tuple[_T, ...]:
    first = tuples[0]
    n = 0
    while n < len(first) and all(len(t) > n and t[n] == first[n] for t in tuples):
        n += 1
    return first[:n]
