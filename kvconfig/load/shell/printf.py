"""What ``printf FORMAT ARGS`` prints, for the formats kvconfig computes: POSIX
``printf`` of plain text, ``%s``, ``%%`` and ``\\n`` (POSIX "printf": the format is used
again while arguments remain), and bash's ``%q`` of arguments every bash release quotes
alike. Anything else is only known at run time.
"""

from __future__ import annotations

import re

_CONVERSION = re.compile(r"%(.)")


def printf(form: str, args: list[str], bash: bool = False) -> str | None:
    """POSIX ``printf FORMAT ARGS`` for a format of plain text, ``%s``, ``%%`` and ``\\n``
    (and bash's ``%q`` with ``bash``): each conversion takes the next argument (none left:
    empty), and the format is used again while arguments remain; None for any other format
    (its conversions, flags, escapes) or a ``%q`` of an argument ``_quoted`` leaves."""
    kinds = "sq%" if bash else "s%"
    if "\\" in form.replace("\\n", "") or any(c not in kinds for c in _CONVERSION.findall(form)):
        return None
    if form.endswith("%") and not form.endswith("%%"):
        return None
    form = form.replace("\\n", "\n")
    out, rest = "", list(args)
    while True:
        takes = sum(c in "sq" for c in _CONVERSION.findall(form))

        def fill(m: re.Match[str]) -> str:
            arg = rest.pop(0) if rest and m.group(1) != "%" else ""
            return "%" if m.group(1) == "%" else arg if m.group(1) == "s" else _quoted(arg)

        out += _CONVERSION.sub(fill, form)
        if "\x00" in out:
            return None
        if not takes or not rest:
            return out


_PLAIN = re.compile(r"[A-Za-z0-9_./@%+:-]+")


def _quoted(arg: str) -> str:
    """bash's ``printf %q`` of ``arg`` (``sh_backslash_quote``, ``''`` for the empty
    string) where every bash release writes it the same: a word of letters, digits and
    ``_./@%+:-`` not starting with ``~`` or ``#`` is itself. Any other: a NUL mark, which
    makes ``printf`` leave the whole output to run time."""
    return "''" if not arg else arg if _PLAIN.fullmatch(arg) else "\x00"
