"""What util-linux ``getopt`` prints (``TEMP=$(getopt -o ... -l ... -- "$@")``, then
``eval set -- "$TEMP"``), the way launch scripts parse their options; not bash's
``getopts`` builtin (``kvconfig.load.shell.getopts``).

From util-linux ``misc-utils/getopt.c`` and its manual page: getopt's own options come
first (``-o``/``--options``, ``-l``/``--longoptions``, repeatable, names split at commas
or blanks, ``:`` a required and ``::`` an optional argument, ``-n``/``--name``, ``-q``,
``-Q``, ``-s``/``--shell``); the old form ``getopt OPTSTRING PARAMS`` prints its words
unquoted.
The parameters are then parsed as glibc's ``getopt_long`` parses them (options anywhere,
unless the short options start with ``+``; ``--`` ends them; a long option by a unique
prefix, its argument after ``=`` or as the next word; short options clustered, an
argument attached or next) and printed normalized: each option, its argument quoted
(an optional one missing: ``''``), `` --``, then the other parameters, each quoted with
single quotes as a POSIX shell reads them. An error (an unknown or ambiguous option, a
missing argument) makes getopt's status 1: None here, as are the modes kvconfig does not
model (``-a``, ``-u``, ``-T``, a shell other than sh or bash, a ``-`` order).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_OWN_VALUED = {"-o": "o", "--options": "o", "-l": "l", "--longoptions": "l", "-n": "n",
               "--name": "n", "-s": "s", "--shell": "s"}  # fmt: skip
_OWN_FLAGS = {"-q", "--quiet", "-Q", "--quiet-output"}
_OWN_LONG = ("--options", "--longoptions", "--name", "--shell", "--quiet", "--quiet-output",
             "--alternative", "--unquoted", "--test", "--help", "--version")  # fmt: skip


def _own_name(name: str) -> str:
    """A long option of getopt's own, as ``getopt_long`` takes it (a unique prefix)."""
    found = [o for o in _OWN_LONG if o == name] or [o for o in _OWN_LONG if o.startswith(name)]
    return found[0] if len(found) == 1 else ""


def _quote(word: str) -> str:
    return "'" + word.replace("'", "'\\''") + "'"


def _word(word: str) -> str:
    """A word of the output, marked to be quoted (or, in the old form, not)."""
    return "\0" + word + "\0"


def _own(args: Sequence[str]) -> tuple[dict[str, list[str]], list[str]] | None:
    """getopt's own options (by letter) and the parameters after them."""
    own: dict[str, list[str]] = {}
    k = 0
    while k < len(args):
        arg = args[k]
        if arg == "--":
            return own, list(args[k + 1 :])
        if not arg.startswith("-") or arg == "-":
            return own, list(args[k:])
        name, eq, value = arg.partition("=")
        if name.startswith("--"):
            name = _own_name(name)
            arg = name + eq + value
        if arg in _OWN_FLAGS:
            k += 1
            continue
        letter = _OWN_VALUED.get(name if name.startswith("--") else arg[:2])
        if letter is None:
            return None  # -a, -u, -T, -h, -V, or an option getopt does not take
        if name.startswith("--"):
            if not eq:
                if k + 1 >= len(args):
                    return None
                value, k = args[k + 1], k + 1
        elif len(arg) > 2:
            value = arg[2:]
        else:
            if k + 1 >= len(args):
                return None
            value, k = args[k + 1], k + 1
        own.setdefault(letter, []).append(value)
        k += 1
    return own, []


def getopt_output(args: Sequence[str]) -> str | None:
    """What ``getopt ARGS`` prints, or None (an error, a mode not modelled)."""
    if args and not args[0].startswith(("-", "+")):  # the old form: getopt OPTSTRING PARAMS,
        found = _parse(list(args[1:]), _short(args[0]), {}, False)
        return None if found is None else found.replace("\0", "")  # printed unquoted
    parsed = _own(args)
    if parsed is None:
        return None
    own, params = parsed
    if any(s not in ("sh", "bash") for s in own.get("s", [])):
        return None
    if "o" not in own:
        return None  # the short options as the first parameter: a form not modelled
    short = own["o"][-1]
    longs: dict[str, str] = {}
    for spec in own.get("l", []):
        for item in re.split(r"[,\s]+", spec):
            if item:
                name = item.rstrip(":")
                longs[name] = item[len(name) :][:2]
    in_order = short.startswith("+")
    if short.startswith("-"):
        return None
    found = _parse(params, _short(short), longs, in_order)
    return None if found is None else re.sub("\0([^\0]*)\0", lambda m: _quote(m.group(1)), found)


def _short(short: str) -> dict[str, str]:
    """Each short option's argument: "" none, ":" required, "::" optional."""
    takes = {}
    short = short.lstrip("+")
    for i, c in enumerate(short):
        if c != ":":
            after = short[i + 1 : i + 3]
            takes[c] = "::" if after == "::" else ":" if after[:1] == ":" else ""
    return takes


def _parse(
    params: list[str], takes: dict[str, str], longs: dict[str, str], in_order: bool
) -> str | None:
    out: list[str] = []
    rest: list[str] = []
    k = 0
    while k < len(params):
        arg = params[k]
        k += 1
        if arg == "--":
            rest += params[k:]
            break
        if arg.startswith("--"):
            name, eq, value = arg[2:].partition("=")
            match = [n for n in longs if n == name] or [n for n in longs if n.startswith(name)]
            if len(match) != 1:
                return None  # unknown or ambiguous
            kind = longs[match[0]]
            out.append(f" --{match[0]}")
            if kind == "":
                if eq:
                    return None  # an argument to an option that takes none
            elif eq:
                out.append(" " + _word(value))
            elif kind == ":":
                if k >= len(params):
                    return None
                out.append(" " + _word(params[k]))
                k += 1
            else:
                out.append(" " + _word(""))
            continue
        if arg.startswith("-") and arg != "-":
            i = 1
            while i < len(arg):
                c = arg[i]
                if c not in takes:
                    return None
                out.append(f" -{c}")
                if takes[c] == "":
                    i += 1
                    continue
                if i + 1 < len(arg):
                    out.append(" " + _word(arg[i + 1 :]))
                elif takes[c] == ":":
                    if k >= len(params):
                        return None
                    out.append(" " + _word(params[k]))
                    k += 1
                else:
                    out.append(" " + _word(""))
                break
            continue
        rest.append(arg)
        if in_order:
            rest += params[k:]
            break
    return "".join(out) + " --" + "".join(" " + _word(r) for r in rest)
