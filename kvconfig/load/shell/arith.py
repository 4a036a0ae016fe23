"""Shell arithmetic (``$(( ))``) on known integers: C precedence, 64-bit wrap-around.

Assignments inside an expression (``i++``, ``x = 1``) are refused (ValueError), so
evaluating never changes a variable.
"""

from __future__ import annotations

import re
from collections.abc import Callable

_TOKEN = re.compile(
    r"\s*(?:(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)|([A-Za-z_][A-Za-z0-9_]*)"
    r"|(\*\*|<<|>>|<=|>=|==|!=|&&|\|\||\+\+|--|[-+*/%<>&|^!~?:()=]))"
)


def _div(a: int, b: int) -> int:
    if b == 0:
        raise ValueError("division by zero")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


_BINARY: dict[str, tuple[int, Callable[[int, int], int]]] = {
    "||": (1, lambda a, b: int(bool(a) or bool(b))),
    "&&": (2, lambda a, b: int(bool(a) and bool(b))),
    "|": (3, lambda a, b: a | b),
    "^": (4, lambda a, b: a ^ b),
    "&": (5, lambda a, b: a & b),
    "==": (6, lambda a, b: int(a == b)),
    "!=": (6, lambda a, b: int(a != b)),
    "<": (7, lambda a, b: int(a < b)),
    ">": (7, lambda a, b: int(a > b)),
    "<=": (7, lambda a, b: int(a <= b)),
    ">=": (7, lambda a, b: int(a >= b)),
    "<<": (8, lambda a, b: a << b),
    ">>": (8, lambda a, b: a >> b),
    "+": (9, lambda a, b: a + b),
    "-": (9, lambda a, b: a - b),
    "*": (10, lambda a, b: a * b),
    "/": (10, _div),
    "%": (10, lambda a, b: a - b * _div(a, b)),
}


def _wrap(n: int) -> int:
    n &= (1 << 64) - 1
    return n - (1 << 64) if n >= 1 << 63 else n


def arith(text: str, variable: Callable[[str], int | None], depth: int = 0) -> int | None:
    """The value of ``text``; None when a variable in it is unknown; ValueError if invalid."""
    if depth > 8:
        raise ValueError("nested too deep")
    tokens: list[str] = []
    i = 0
    while i < len(text):
        if text[i:].strip() == "":
            break
        m = _TOKEN.match(text, i)
        if m is None:
            raise ValueError(f"cannot read {text[i:]!r}")
        tokens.append(m.group(m.lastindex or 0))
        i = m.end()
    if not tokens:
        return 0
    unknown = False
    pos = 0

    def peek() -> str:
        return tokens[pos] if pos < len(tokens) else ""

    def take() -> str:
        nonlocal pos
        pos += 1
        return tokens[pos - 1]

    def primary() -> int:
        nonlocal unknown
        tok = take() if pos < len(tokens) else ""
        if tok in ("-", "+", "!", "~"):
            value = primary()
            return {"-": -value, "+": value, "!": int(not value), "~": ~value}[tok]
        if tok in ("++", "--", "="):
            raise ValueError("assignment")
        if tok == "(":
            value = expression(0)
            if take() != ")" if pos < len(tokens) else True:
                raise ValueError("unbalanced (")
            return value
        if re.fullmatch(r"0[xX][0-9a-fA-F]+", tok):
            return int(tok, 16)
        if re.fullmatch(r"0[0-7]*", tok):
            return int(tok, 8)
        if tok.isdigit():
            return int(tok)
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", tok):
            if peek() in ("++", "--", "="):
                raise ValueError("assignment")
            found = variable(tok)
            if found is None:
                unknown = True
                return 0
            return found
        raise ValueError(f"unexpected {tok!r}")

    def expression(min_prec: int) -> int:
        left = primary()
        while True:
            op = peek()
            if op == "?" and min_prec <= 0:
                take()
                yes = expression(0)
                if take() != ":" if pos < len(tokens) else True:
                    raise ValueError("? without :")
                no = expression(0)
                left = yes if left else no
                continue
            if op == "**" and min_prec <= 11:
                take()
                right = expression(11)
                if right < 0:
                    raise ValueError("negative exponent")
                left = _wrap(left**right)
                continue
            if op not in _BINARY or _BINARY[op][0] < min_prec:
                return left
            prec, fn = _BINARY[op]
            take()
            right = expression(prec + 1)
            left = _wrap(fn(left, right))

    value = expression(0)
    if pos != len(tokens):
        raise ValueError(f"unexpected {tokens[pos]!r}")
    return None if unknown else value


def arith_value(text: str, variable: Callable[[str], int | None]) -> int | None:
    """``arith``, with an expression the shell would refuse read as unknown (None)."""
    try:
        return arith(text, variable)
    except ValueError:
        return None


_REFUSED = re.compile(r"[{}\"';.]")
"""Characters no bash arithmetic expression holds (``i+{step}``, ``1.5``): bash refuses the
expression ("syntax error: operand expected", "invalid arithmetic operator")."""


def surely_refused(expanded: str | None) -> bool:
    """Whether bash surely refuses an arithmetic expression, once expanded."""
    return expanded is not None and bool(_REFUSED.search(expanded))
