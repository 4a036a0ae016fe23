"""GNU sed's ``s`` command, for ``$(sed 's/RE/TEXT/' FILE)`` and ``$(echo X | sed ...)``
(``kvconfig.load.shell.output``): what ``sed [-E] [-e] SCRIPT [FILE...]`` prints when its
script is one ``s`` command and kvconfig knows its input (``parse``, ``edit``); None (only
known at run time) for anything else.

As GNU sed 4.x reads it (its manual, "The s Command", "BRE syntax", "ERE syntax",
"Escapes"): the delimiter is the character after ``s``; in a basic regular expression
``\\( \\) \\{ \\} \\+ \\? \\|`` are the operators and ``( ) { } + ? |`` themselves, ``*``
first is itself, ``^`` first and ``$`` last are anchors; ``-E`` (``-r``) reads an extended
one. The replacement's ``&`` is the match and ``\\1`` ... ``\\9`` its groups; flags ``g``, a
number N (from the Nth match), ``i``/``I``. Each line is edited on its own and printed with
its newline (none after a last line that had none). Escapes kvconfig does not model
(``\\w``, ``\\<``, ``\\L``, classes of a locale ...) leave the output to run time.
"""

from __future__ import annotations

import re

_CLASSES = {
    "alpha": "a-zA-Z", "digit": "0-9", "alnum": "a-zA-Z0-9", "upper": "A-Z", "lower": "a-z",
    "space": r" \t\n\r\f\v", "blank": r" \t", "punct": r"!-/:-@\[-`{-~", "xdigit": "0-9A-Fa-f",
}  # fmt: skip


def parse(args: list[str]) -> tuple[str, bool, list[str]] | None:
    """(script, extended, input files; none: standard input) of ``sed ARGS``; None for an
    option that changes what it prints (``-n``, ``-i``, ``-s``, ``-z``, ``-f`` ...)."""
    script: str | None = None
    extended = False
    files: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-E", "-r", "--regexp-extended"):
            extended = True
        elif a in ("-e", "--expression") and i + 1 < len(args) and script is None:
            script, i = args[i + 1], i + 1
        elif a.startswith("--expression=") and script is None:
            script = a.partition("=")[2]
        elif a == "--":
            rest = args[i + 1 :]
            if script is None and rest:
                script, rest = rest[0], rest[1:]
            files += rest
            break
        elif a.startswith("-") and a != "-":
            return None
        elif script is None:
            script = a
        else:
            files.append(a)
        i += 1
    return None if script is None else (script, extended, files)


def edit(script: str, extended: bool, text: str) -> str | None:
    """What sed prints running ``script`` over ``text``; None when kvconfig cannot tell."""
    command = _s_command(script.strip(), extended)
    if command is None:
        return None
    pattern, replace, count, start = command
    repeats = _repetitions(pattern.pattern)
    out: list[str] = []
    for line in text.splitlines(keepends=True):
        body, end = (line[:-1], "\n") if line.endswith("\n") else (line, "")
        if (len(body) + 1) ** (repeats + 1) > MAX_STEPS:
            return None  # a backtracking search this long is left to run time, not waited on
        out.append(_edit(pattern, replace, count, start, body) + end)
    return "".join(out)


MAX_STEPS = 10**7
"""The most steps a line's search may take, as (line length + 1) to the power of one
more than the expression's repetitions (a backtracking engine tries each start and, for
each repetition, each length): a script of a hostile file must not hang the reader."""


def _repetitions(regex: str) -> int:
    """How many repetition operators a (Python) expression holds, counting any ``*``,
    ``+``, ``?`` or ``{`` that no backslash escapes (one inside brackets counts too: an
    overcount only leaves more to run time)."""
    return len(re.findall(r"(?<!\\)(?:\\\\)*[*+?{]", regex))


def _edit(pattern: re.Pattern[str], replace: str, count: int, start: int, line: str) -> str:
    """One line through ``s``: the matches left to right, as sed finds them (an empty match
    right after the previous match is not one: ``s/a*/-/g`` of ``ab`` is ``-b-``)."""
    out: list[str] = []
    pos, seen, last = 0, 0, -1
    while pos <= len(line):
        m = pattern.search(line, pos)
        if m is None:
            break
        if m.start() == m.end() == last:  # empty, where the last match ended
            if m.start() >= len(line):
                break
            out.append(line[pos : m.start() + 1])
            pos = m.start() + 1
            continue
        seen += 1
        out.append(line[pos : m.start()])
        chosen = seen >= start and (count == 0 or seen < start + count)
        out.append(m.expand(replace) if chosen else m.group(0))
        last = m.end()
        if m.end() > m.start():
            pos = m.end()
        elif m.start() < len(line):
            out.append(line[m.start()])
            pos = m.start() + 1
        else:
            pos = len(line) + 1
        if count and seen >= start + count - 1:
            break
    out.append(line[pos:])
    return "".join(out)


def _s_command(script: str, extended: bool) -> tuple[re.Pattern[str], str, int, int] | None:
    """(pattern, replacement template, how many matches (0: all), the first one)."""
    if len(script) < 4 or script[0] != "s" or script[1] in "\\\n":
        return None
    delim = script[1]
    parts: list[str] = []
    i, current = 2, []
    while i < len(script) and len(parts) < 2:
        c = script[i]
        if c == "[" and not parts:  # a bracket expression holds the delimiter as itself
            end = _bracket_end(script, i)
            if end is None:
                return None
            current.append(script[i:end])
            i = end
            continue
        if c == "\\" and i + 1 < len(script):
            nxt = script[i + 1]
            current.append(nxt if nxt == delim else c + nxt)
            i += 2
            continue
        if c == delim:
            parts.append("".join(current))
            current = []
        else:
            current.append(c)
        i += 1
    if len(parts) < 2:
        return None
    flags = script[i:]
    regex = _ere(parts[0]) if extended else _bre(parts[0])
    replace = _replacement(parts[1])
    m = re.fullmatch(r"([gIi]|[0-9]+)*", flags)
    if regex is None or replace is None or m is None or not parts[0]:
        return None
    numbers = re.findall(r"[0-9]+", flags)
    if len(numbers) > 1 or numbers == ["0"]:
        return None
    start = int(numbers[0]) if numbers else 1
    count = 0 if "g" in flags else 1
    try:
        pattern = re.compile(regex, re.IGNORECASE if re.search("[iI]", flags) else 0)
    except re.error:
        return None
    groups = [int(g) for g in re.findall(r"\\g<(\d+)>", replace)]
    if any(g > pattern.groups for g in groups):
        return None  # sed refuses: invalid reference \N on `s' command's RHS
    return pattern, replace, count, start


def _bracket_end(text: str, i: int) -> int | None:
    """The index after the bracket expression at ``text[i] == "["``."""
    j = i + 1
    if j < len(text) and text[j] == "^":
        j += 1
    if j < len(text) and text[j] == "]":
        j += 1
    while j < len(text) and text[j] != "]":
        if text[j] == "[" and j + 1 < len(text) and text[j + 1] in ":.=":
            close = text.find(text[j + 1] + "]", j + 2)
            if close < 0:
                return None
            j = close + 2
            continue
        j += 1
    return j + 1 if j < len(text) else None


def _bracket(text: str, i: int) -> tuple[str, int] | None:
    """A bracket expression at ``text[i] == "["``: (Python's, index after it)."""
    j = i + 1
    out = "["
    if j < len(text) and text[j] == "^":
        out, j = out + "^", j + 1
    if j < len(text) and text[j] == "]":
        out, j = out + r"\]", j + 1
    while j < len(text) and text[j] != "]":
        if text.startswith("[:", j):
            end = text.find(":]", j)
            name = text[j + 2 : end] if end > 0 else ""
            if name not in _CLASSES:
                return None
            out, j = out + _CLASSES[name], end + 2
            continue
        if text[j] in "[\\":  # [. .] and [= =], or a backslash (GNU's escapes): not modelled
            return None
        out, j = out + text[j], j + 1
    if j >= len(text):
        return None
    if re.fullmatch(r"\[:[^\]]*:\]", text[i : j + 1]):
        return None  # [:digit:] outside a bracket: GNU sed refuses it
    return out + "]", j + 1


def _bre(text: str) -> str | None:
    """A POSIX basic regular expression (with GNU's ``\\+ \\? \\|``) as Python's; None
    where GNU sed refuses it or reads it in a way Python's syntax cannot say (a
    repetition of a repetition)."""
    out: list[str] = []
    i = 0
    # what the next repetition would repeat: "start" (nothing), "atom", "rep" (a repetition)
    # or "group" (a group: POSIX matches the longest way through it, Python the first)
    last = "start"
    while i < len(text):
        c = text[i]
        piece, kind = c, "atom"
        if c == "\\":
            if i + 1 >= len(text):
                return None
            n = text[i + 1]
            i += 2
            if n == "{":
                interval = re.match(r"([0-9]+(?:,[0-9]*)?)\\\}", text[i:])
                if interval is None or last != "atom":
                    return None  # sed refuses it (Invalid preceding regular expression ...)
                out.append("{" + interval.group(1) + "}")
                i += interval.end()
                last = "rep"
                continue
            if n in "+?":
                if last != "atom":  # nothing, a repetition, or a group (POSIX's longest)
                    return None
                piece, kind = n, "rep"
            elif n == "|":
                return None  # POSIX takes the longest alternative, Python the first
            elif n == "(":
                piece, kind = n, "start"
            elif n == ")":
                piece, kind = n, "group"
            elif n.isdigit() and n != "0":
                piece = f"(?:\\{n})"  # apart from digits after it (\100 is no octal)
            elif n == "n":
                piece = "\n"
            elif n == "t":
                piece = "\t"
            elif n in ".*[]^$\\/":
                piece = re.escape(n)
            else:
                return None  # \w \s \b \< \> \` \' ...: not modelled
            out.append(piece)
            last = kind
            continue
        if c == "[":
            found = _bracket(text, i)
            if found is None:
                return None
            piece, i = found[0], found[1]
        elif c == "*":
            if last in ("rep", "group"):
                return None
            piece, kind = ("*", "rep") if last == "atom" else (r"\*", "atom")
            i += 1
        elif c == "^" and last == "start" and (not out or out[-1] in ("(", "|")):
            piece, kind = "^", "start"  # an anchor first: a * after it is itself
            i += 1
        elif c == "$" and (i == len(text) - 1 or text.startswith(("\\)", "\\|"), i + 1)):
            piece = "$"
            i += 1
        else:
            piece = "." if c == "." else re.escape(c)
            i += 1
        out.append(piece)
        last = kind
    return "".join(out)


def _ere(text: str) -> str | None:
    """A POSIX extended regular expression as Python's: the operators are Python's; a
    backslash escape other than a special character or a back-reference is not read, nor
    an alternation or a repeated group (POSIX matches the longest way, Python the first
    that works) or a repetition of nothing or of a repetition (Python's ``*?`` and ``*+``
    are lazy and possessive; POSIX's, a repetition again)."""
    out: list[str] = []
    i = 0
    repeated = False
    while i < len(text):
        c = text[i]
        rep = False
        if c == "\\":
            n = text[i + 1] if i + 1 < len(text) else ""
            if n.isdigit() and n != "0":
                out.append(f"(?:\\{n})")
            elif n and n in ".*+?()[]{}|^$\\/":
                out.append("\\" + n)
            elif n == "n":
                out.append("\n")
            elif n == "t":
                out.append("\t")
            else:
                return None
            i += 2
        elif c == "[":
            found = _bracket(text, i)
            if found is None:
                return None
            out.append(found[0])
            i = found[1]
        elif c == "|":
            return None  # POSIX takes the longest alternative, Python the first
        elif c in "*+?{":
            if not out or out[-1] in ("(", ")", "^") or repeated:
                return None  # a repetition of nothing, of a repetition or of a group
            interval = re.match(r"\{[0-9]+(?:,[0-9]*)?\}", text[i:]) if c == "{" else None
            if c == "{" and interval is None:
                return None
            piece = interval.group() if interval is not None else c
            out.append(piece)
            i += len(piece)
            rep = True
        else:
            out.append(c)
            i += 1
        repeated = rep
    return "".join(out)


def _replacement(text: str) -> str | None:
    """The replacement as a template for ``Match.expand``."""
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "&":
            out.append(r"\g<0>")
        elif c == "\\":
            n = text[i + 1] if i + 1 < len(text) else ""
            if n.isdigit():
                out.append(rf"\g<{n}>")
            elif n == "n":
                out.append("\n")
            elif n == "t":
                out.append("\t")
            elif n in ("&", "\\") or (n and not n.isalnum()):
                out.append(n.replace("\\", "\\\\"))
            else:
                return None  # \L \U \E \l \u ...: GNU's case conversions, not modelled
            i += 2
            continue
        else:
            out.append(c.replace("\\", "\\\\"))
        i += 1
    return "".join(out)
