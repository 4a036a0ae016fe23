"""The script's ``EXIT`` trap, when it ends the script's process group.

``trap 'echo Cleaning up...; kill 0' EXIT`` runs ``kill 0`` when the script ends (bash's
manual, ``trap``; POSIX ``trap``: ``EXIT`` or ``0``). A background job of a script without
job control stays in the script's process group, so the signal ends it too (``kill(2)``:
pid 0 is "every process in the process group of the calling process"). A server the
script starts in the background and does not outlive the script by, because nothing after
it waits or runs a program in the foreground, is ended as it starts: it serves nothing.

kvconfig follows an ``EXIT`` trap set outside subshells and run-time choices whose action,
as written, ends the group (``kill 0``, ``kill -TERM 0``, ``kill -- -$$``,
``kill $(jobs -p)``; a function called as the action is not followed), and a script that
ends by ``exec`` runs no trap. ``echo``, ``printf`` and other quick programs in the
foreground after the server do not keep it alive; ``wait`` and any other program do.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import replace

from kvconfig.load.shell.remote import _Remote
from kvconfig.load.shell.state import Command

_KILLS_GROUP = re.compile(
    r"\bkill\s+(?:-\w+\s+)*(?:--\s+)?(?:0|-\$\$|\"-\$\$\"|'-\$\$')(?:\s|;|$)"
    r"|\bkill\s+(?:-\w+\s+)*\"?\$\(jobs\s+-p\)"
)
_QUICK = frozenset({"echo", "printf", "true", "false", "date", "mkdir", "touch", "rm", "tee"})
"""Programs that end at once: a server they follow is not kept alive by them."""


class _Traps(_Remote):
    exit_kills: bool | None = False
    """The ``EXIT`` trap ends the script's process group; None: only known at run time."""
    exit_why: str = ""
    """Why that is only known at run time."""
    waited: int = 0
    """How many commands had run at the script's last ``wait``."""

    def trap(self, args: Sequence[str] | None) -> int:
        """``trap [--] ACTION SIGNAL...`` (None: words only known at run time)."""
        if any(f.kind == "subshell" for f in self.frames):
            return 0  # a subshell's own trap
        if args is None:
            self.exit_kills, self.exit_why = None, "a trap's words only known at run time"
            return 0
        args = list(args[1:] if args[:1] == ["--"] else args)
        if not args or args[0] in ("-l", "-p"):
            return 0
        if args[0].isdigit():  # trap 0 ...: every signal named is reset (POSIX)
            action, signals = "-", args
        else:
            action, signals = args[0], args[1:]
        if not any(s.upper().removeprefix("SIG") in ("EXIT", "0") for s in signals):
            return 0
        kills = bool(_KILLS_GROUP.search(action)) if action not in ("-", "") else False
        if self.state.when and (kills or self.exit_kills is not False):
            self.exit_kills, self.exit_why = None, self.state.when[0]
        else:
            self.exit_kills = kills
        return 0

    def waits(self) -> None:
        """``wait``: the servers started so far outlive the script's end."""
        if not any(f.kind == "subshell" for f in self.frames):
            self.waited = len(self.commands)


def survivors(commands: Sequence[Command], waited: int, why: str | None = None) -> list[Command]:
    """``commands`` less the background ones the ``EXIT`` trap ends as they start: those
    after the last ``wait`` (``waited`` commands before it) that no foreground program but
    a quick one follows. With ``why`` (whether the trap ends them is only known at run
    time, for that reason), they are kept, as running only when it does not."""
    if commands and commands[-1].replaces and not commands[-1].background:
        return list(commands)  # exec: the shell is gone, no trap runs
    out = list(commands)
    k = len(out)
    while k > waited:
        c = out[k - 1]
        if not c.background and (c.when or os.path.basename(c.words[0]) not in _QUICK):
            break
        k -= 1
    if why is None:
        return out[:k] + [c for c in out[k:] if not c.background]
    when = f"no EXIT trap ending the script's process group ({why})"
    return out[:k] + [replace(c, when=(*c.when, when)) if c.background else c for c in out[k:]]
