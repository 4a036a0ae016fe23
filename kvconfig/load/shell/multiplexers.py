"""Terminal multiplexers: ``tmux`` and GNU ``screen`` run a command in a detached terminal
of this machine, and the script goes on without waiting for it.

* ``tmux [-2CDlNuVv] [-f FILE] [-L NAME] [-S PATH] [-T FEATURES] COMMAND`` (tmux(1)):
  ``new-session -d`` (``new``), ``new-window`` (``neww``), ``split-window`` (``splitw``),
  ``respawn-pane`` and ``respawn-window`` run their shell-command: one argument is read by
  the default shell (``sh -c``), several are run as they are (tmux 3.0 and later). Its
  environment is the tmux server's global environment plus the session's ``-e NAME=VALUE``
  settings; the script's exported variables reach it only when this command starts the
  server, so only ``-e`` settings are known. ``new-session`` starts in the client's folder
  unless ``-c`` names one; the others in the session's (only known at run time). Without
  ``-d``, ``new-session`` attaches to a terminal, which a script has not: it starts nothing
  kvconfig reads.
* ``tmux send-keys [-t PANE] KEYS...`` types its keys into a pane's shell: each argument
  that is no key name (``Enter``, ``C-m``, ``Space`` ...: tmux's ``key-string.c``) is typed
  as its text, and each line ended by ``Enter`` (``C-m``, ``KPEnter``, ``C-j``) is a command
  the pane's shell runs, in a folder and environment only known at run time.
* ``screen -d -m [-S NAME] COMMAND [ARGS]`` (screen(1): "start screen in detached mode")
  runs COMMAND as given, with the environment screen got from the script; other modes
  attach to a terminal or talk to a running session (``-X``, ``-r``): not read.

A command one of them runs whose shape kvconfig does not know is left alone.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

_TMUX_GLOBAL_VALUED = frozenset("cfLST")
"""tmux's own options that take a value (``-c SHELL-COMMAND`` runs a command: not read)."""

_TMUX_RUNS: dict[str, tuple[str, frozenset[str]]] = {
    "new-session": ("new", frozenset("cefFnstxy")),
    "new-window": ("neww", frozenset("cenFt")),
    "split-window": ("splitw", frozenset("celpFt")),
    "respawn-pane": ("respawnp", frozenset("cet")),
    "respawn-window": ("respawnw", frozenset("cet")),
}
"""tmux commands that run a shell-command (their alias, their flags that take a value)."""

_SEND_KEYS_VALUED = frozenset("cNt")

ENTER = frozenset({"Enter", "C-m", "KPEnter", "C-j", "^M", "^J"})
"""Key names that end a line typed into a pane."""
_KEYS = {"Space": " ", "Tab": "\t"}
_KEY_NAME = re.compile(
    r"(?:[CMS]-)+.|\^.|F\d{1,2}|KP\w+|(?:IC|Insert|DC|Delete|Home|End|NPage|PageDown|PgDn"
    r"|PPage|PageUp|PgUp|BTab|BSpace|Escape|Up|Down|Left|Right|Any)"
)
"""Other key names tmux looks up (``key-string.c``): a line holding one is not read."""

_SCREEN_VALUED = frozenset("cehpsStTX")
"""screen's options that take a value (``-S NAME``; ``-X`` sends a command to a session)."""


def tmux_run(words: Sequence[str]) -> tuple[int, dict[str, str | None], str | None] | None:
    """``tmux ... new-session -d ... SHELL-COMMAND``: (index of its first word, the ``-e``
    settings, its folder: ``.`` for the client's, None when only known at run time); None
    when it runs no command kvconfig reads."""
    k = _tmux_command(words)
    if k is None or k >= len(words):
        return None
    name = next((n for n, (alias, _) in _TMUX_RUNS.items() if words[k] in (n, alias)), None)
    if name is None:
        return None
    valued = _TMUX_RUNS[name][1]
    env: dict[str, str | None] = {}
    folder: str | None = "." if name == "new-session" else None
    detached = name != "new-session"
    k += 1
    while k < len(words) and words[k].startswith("-") and words[k] != "-":
        if words[k] == "--":
            k += 1
            break
        flags, option, value, k = _cluster(words, k, valued)
        detached = detached or "d" in flags
        if option == "e":
            key, has, given = (value or "").partition("=")
            env[key] = given if has else None
        elif option == "c":
            folder = value if (value or "").startswith("/") else None
    if not detached or k >= len(words) or ";" in words[k:]:
        return None  # attaches to a terminal, runs the default command, or chains commands
    return k, env, folder


def tmux_keys(words: Sequence[str]) -> int | None:
    """``tmux send-keys [-t PANE] KEYS...``: index of the first key; None when it is not
    that, or types keys in a way kvconfig does not follow (``-l``, ``-X``, ``-N``)."""
    k = _tmux_command(words)
    if k is None or k >= len(words) or words[k] not in ("send-keys", "send"):
        return None
    k += 1
    while k < len(words) and words[k].startswith("-") and len(words[k]) > 1:
        if words[k] == "--":
            return k + 1
        flags, option, _value, k = _cluster(words, k, _SEND_KEYS_VALUED)
        if option == "N":
            return None  # the keys repeated
        if set(flags) - {"K"}:
            return None  # -l, -X, -H, -M, -R, -F: not typed as keys
    return k


def typed(keys: Sequence[str]) -> str | None:
    """The command lines ``keys`` type and end with ``Enter``, one a line; None when a
    key other than ``Enter``, ``Space`` and ``Tab`` is among them, or no line ends."""
    lines, line = [], ""
    for key in keys:
        if key in ENTER:
            lines.append(line)
            line = ""
        elif key in _KEYS:
            line += _KEYS[key]
        elif _KEY_NAME.fullmatch(key):
            return None
        else:
            line += key
    return "\n".join(lines) if lines else None


def screen_run(words: Sequence[str]) -> int | None:
    """``screen -d -m [-S NAME] COMMAND ARGS``: index of COMMAND; None for any other use."""
    k, flags = 1, ""
    while k < len(words) and words[k].startswith("-") and len(words[k]) > 1:
        word = words[k][1:]
        if word in ("Logfile",):
            k += 2
            continue
        given, option, _value, k = _cluster(words, k, _SCREEN_VALUED)
        if option == "X":
            return None
        flags += given
    if not {"d", "m"} <= set(flags) or set(flags) & set("rRxDlsw") or k >= len(words):
        return None
    return k


def _tmux_command(words: Sequence[str]) -> int | None:
    """Index of the command after ``tmux`` and its own options; None when it is no tmux
    or runs a shell-command of its own (``-c``)."""
    if not words or os.path.basename(words[0]) != "tmux":
        return None
    k = 1
    while k < len(words) and words[k].startswith("-") and len(words[k]) > 1:
        _flags, option, _value, k = _cluster(words, k, _TMUX_GLOBAL_VALUED)
        if option == "c":
            return None
    return k


def _cluster(
    words: Sequence[str], k: int, valued: frozenset[str]
) -> tuple[str, str | None, str | None, int]:
    """The one-letter options of ``words[k]`` (``-dS name``, ``-Sname``), as getopt reads a
    cluster: (the letters before the first that takes a value, that letter or None, its
    value, attached or the next word (None past the end), the index after them)."""
    letters = words[k][1:]
    for i, c in enumerate(letters):
        if c in valued:
            if letters[i + 1 :]:
                return letters[:i], c, letters[i + 1 :], k + 1
            return letters[:i], c, words[k + 1] if k + 1 < len(words) else None, k + 2
    return letters, None, None, k + 1
