"""The path programs a script runs inside ``$(...)``: ``dirname``, ``basename``,
``readlink`` and ``realpath``, computed as GNU coreutils computes them; and ``seq``.

``dirname`` and ``basename`` are functions of their words alone (coreutils
``src/dirname.c``, ``src/basename.c``, on gnulib's ``dir_name``/``last_component``;
POSIX ``dirname``/``basename``): trailing slashes are dropped, a name without a slash
has the folder ``.``, ``//`` is ``/``, and ``basename NAME SUFFIX`` removes a suffix that
is not the whole name. ``readlink NAME`` prints a link's target as written in it, and
nothing for a name that is not a link (its status 1). ``readlink -f``/``-e`` and
``realpath`` (coreutils
``src/readlink.c``, ``src/realpath.c``, gnulib ``canonicalize``) follow links on the
machine that runs the script: kvconfig computes them only for a launch script read here
(``files=True``), for an absolute name or one taken from a current folder kvconfig
knows (``kvconfig.load.shell.dirs``), and only when the path and its result lie under
the allowed roots (``kvconfig.load.roots``); every other case, and every failure (a
missing folder, a link loop), is only known at run time (None); ``readlink`` without
``-f`` likewise, but only its name's folder need lie under the roots. ``cd DIR && pwd`` is
``kvconfig.load.shell.dirs``'s; util-linux ``getopt`` is ``kvconfig.load.shell.gnu_getopt``'s."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from kvconfig.load.roots import inside

PROGRAMS = frozenset({"dirname", "basename", "readlink", "realpath", "seq", "getopt"})
"""The programs whose output kvconfig computes."""


MAX_SEQ = 4096
"""Most numbers kvconfig computes ``seq`` printing (a loop follows at most ``MAX_LOOP``)."""


def seq(args: Sequence[str]) -> str | None:
    """``seq [FIRST [INCREMENT]] LAST`` on integers, one number a line (coreutils
    ``src/seq.c``: FIRST and INCREMENT default to 1; nothing when LAST is past FIRST);
    None for options (``-s``, ``-w``, ``-f``), fractions, a zero increment or more than
    ``MAX_SEQ`` numbers."""
    if not 1 <= len(args) <= 3 or not all(re.fullmatch(r"[+-]?[0-9]+", a) for a in args):
        return None
    numbers = [int(a) for a in args]
    first, step, last = (
        (1, 1, numbers[0]) if len(numbers) == 1
        else (numbers[0], 1, numbers[1]) if len(numbers) == 2
        else (numbers[0], numbers[1], numbers[2])
    )  # fmt: skip
    if step == 0:
        return None
    values = range(first, last + (1 if step > 0 else -1), step)
    if len(values) > MAX_SEQ:
        return None
    return "".join(f"{v}\n" for v in values)


def dirname(name: str) -> str:
    """``dirname NAME`` (coreutils, gnulib ``dir_len``)."""
    stripped = name.rstrip("/")
    if not stripped:
        return "/" if name else "."
    head = stripped.rpartition("/")[0]
    if "/" not in stripped:
        return "."
    head = head.rstrip("/")
    return head or "/"


def basename(name: str, suffix: str = "") -> str:
    """``basename NAME [SUFFIX]`` (coreutils: the suffix goes only when it is not the whole
    last component)."""
    stripped = name.rstrip("/")
    if not stripped:
        return "/" if name else ""
    base = stripped.rpartition("/")[2]
    if suffix and base != suffix and base.endswith(suffix):
        base = base[: -len(suffix)]
    return base


def canonical(name: str, existing: bool) -> str | None:
    """``readlink -f NAME`` (``existing``: ``-e``) on this machine's files, or None when
    it fails or depends on anything kvconfig does not read."""
    if not name.startswith("/") or "\0" in name:
        return None
    if not inside(Path(name)):
        return None
    trailing = name.endswith("/") and name.strip("/") != ""
    stripped = name.rstrip("/") or "/"
    head, _, tail = stripped.rpartition("/")
    try:
        if existing or tail in ("", ".", "..") or os.path.lexists(stripped):
            real = os.path.realpath(stripped, strict=True)
        else:
            folder = os.path.realpath(head or "/", strict=True)
            if not os.path.isdir(folder):
                return None
            real = os.path.join(folder, tail)
    except (OSError, RuntimeError, ValueError):
        return None
    if trailing and os.path.exists(real) and not os.path.isdir(real):
        return None  # ENOTDIR: readlink -f prints nothing
    return real if inside(Path(real)) else None


def output(words: Sequence[str], files: bool, cwd: str | None = None) -> str | None:
    """What ``words`` (one of ``PROGRAMS`` and its arguments) print, or None when it is
    not computed here (an option kvconfig does not model, an error, a file only the
    machine that runs the script can see). ``cwd``: the current folder, when known (a
    relative name to ``readlink -f``/``realpath`` is taken from it)."""
    program, args = words[0], list(words[1:])
    if program == "seq":
        return seq(args)
    if program == "getopt":
        from kvconfig.load.shell.gnu_getopt import getopt_output

        return getopt_output(args)
    options: list[str] = []
    names: list[str] = []
    valued = {"-s", "--suffix"} if program == "basename" else set()
    k = 0
    while k < len(args):
        arg = args[k]
        if arg == "--":
            names.extend(args[k + 1 :])
            break
        if arg.startswith("-") and arg != "-":
            k += 1
            if arg.startswith("--"):
                if arg not in valued:
                    options.append(arg)
                    continue
                if k >= len(args):
                    return None
                options.append(f"--suffix={args[k]}")
                k += 1
                continue
            for i, c in enumerate(arg[1:], start=1):  # a cluster: -fn, -as .sh, -s.sh
                if f"-{c}" not in valued:
                    options.append(f"-{c}")
                    continue
                value = arg[i + 1 :]
                if not value:
                    if k >= len(args):
                        return None
                    value = args[k]
                    k += 1
                options.append(f"--suffix={value}")
                break
            continue
        if program == "basename":  # getopt "+as:z": the first name ends the options
            names.extend(args[k:])
            break
        names.append(arg)  # the others' getopt permutes: options may follow the names
        k += 1
    if not names:
        return None
    if program == "dirname":
        return None if options else "\n".join(dirname(n) for n in names)
    if program == "basename":
        return _basename(options, names)
    if cwd is not None:
        names = [n if n.startswith("/") or not n else f"{cwd}/{n}" for n in names]
    return _canonical(program, options, names, files)


def _basename(options: list[str], names: list[str]) -> str | None:
    suffix = ""
    many = False
    for opt in options:
        if opt in ("-a", "--multiple"):
            many = True
        elif opt.startswith("--suffix="):
            suffix = opt.partition("=")[2]
            many = True
        else:
            return None
    if not many:
        if len(names) > 2:
            return None  # basename: extra operand
        suffix = names[1] if len(names) == 2 else ""
        names = names[:1]
    return "\n".join(basename(n, suffix) for n in names)


def _canonical(program: str, options: list[str], names: list[str], files: bool) -> str | None:
    if not files:
        return None
    existing = False
    canonicalize = program == "realpath"  # realpath's default is readlink -f's
    for opt in options:
        if opt in ("-e", "--canonicalize-existing"):
            existing = canonicalize = True
        elif opt in ("-f", "--canonicalize"):
            canonicalize = True
        elif opt in ("-n", "--no-newline", "-q", "--quiet", "-s", "--silent", "-v", "--verbose"):
            if program == "realpath" and opt in ("-s",):
                return None  # realpath -s: --strip, links not followed
            continue
        else:
            return None
    if not canonicalize:
        return None if program != "readlink" else _targets(names)
    out = []
    for name in names:
        real = canonical(name, existing)
        if real is None:
            return None
        out.append(real)
    return "\n".join(out)


def _targets(names: list[str]) -> str | None:
    """``readlink NAME...`` without ``-f``: the target of each name that is a link, as
    written in it (readlink(2)); a name that is not one prints nothing (the status is
    then 1). None unless every name is absolute and in a folder under the allowed
    roots."""
    out = []
    for name in names:
        parent = os.path.dirname(name.rstrip("/")) or "/"
        if not name.startswith("/") or "\0" in name or not inside(Path(parent)):
            return None
        try:
            out.append(os.readlink(name))
        except OSError:
            continue  # not a link, or no such file: nothing printed
    return "\n".join(out)
