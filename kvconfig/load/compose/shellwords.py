"""A string ``command`` or ``entrypoint`` split as compose splits it (go-shellwords)."""

from __future__ import annotations


def split_command(text: str) -> tuple[list[str], str, bool]:
    """A string ``command``/``entrypoint`` split as compose splits it: (words, the text
    compose drops, whether the string is invalid).

    compose-go (``types/command.go``) calls ``shellwords.Parse`` of mattn/go-shellwords
    v1.0.12 (its go.mod) without environment or backtick parsing: quotes and backslashes
    as a shell has them, but no expansion, ``#`` is no comment, and reading stops at the
    first unquoted ``;`` ``&`` ``|`` ``<`` ``>`` (a ``2>`` drops its ``2``). A ``(`` that
    does not open ``$(`` is invalid.
    """
    args: list[str] = []
    buf = ""
    escaped = double = single = back = dollar = False
    got = 0  # 0: nothing, 1: a word, 2: a word that closed a quote
    pos = -1
    i = -1
    for r in text:
        i += 1
        if escaped:
            buf += r
            escaped = False
            got = 1
            continue
        if r == "\\":
            if single:
                buf += r
            else:
                escaped = True
            continue
        if r in " \t\r\n":
            if single or double or back or dollar:
                buf += r
            elif got:
                args.append(buf)
                buf, got = "", 0
            continue
        if r == "`" and not single and not double and not dollar:
            back = not back
        elif r == ")" and not single and not double and not back:
            dollar = not dollar
        elif r == "(" and not single and not double and not back:
            if not dollar and buf.endswith("$"):
                dollar = True
                buf += "("
                continue
            return args, "", True
        elif r == '"' and not single and not dollar:
            if double:
                got = 2
            double = not double
            continue
        elif r == "'" and not double and not dollar:
            if single:
                got = 2
            single = not single
            continue
        elif r in ";&|<>" and not (single or double or back or dollar):
            if r == ">" and buf and "0" <= buf[0] <= "9":
                i -= 1
                got = 0
            pos = i
            break
        got = 1
        buf += r
    if got:
        args.append(buf)
    if escaped or single or double or back or dollar:
        return args, "", True
    dropped = text[pos:].strip() if pos >= 0 else ""
    return args, dropped, False
