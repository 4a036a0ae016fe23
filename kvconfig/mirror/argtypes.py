"""vLLM's own types of ``vllm serve`` option values, as its parser converts them
(``vllm/utils/argparse_utils.py``: ``human_readable_int``), and argparse's check of an
option's ``choices``."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping

from kvconfig.mirror import versions

_HUMAN_INT = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")


def human_readable_int(text: str) -> int:
    """vLLM's ``human_readable_int``: ``1k`` is 1000, ``1K`` is 1024; raises ValueError."""
    text = text.strip()
    match = _HUMAN_INT.fullmatch(text)
    if match:
        number, suffix = match.groups()
        decimal = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
        if suffix in decimal:
            return int(float(number) * decimal[suffix])
        return int(number) * {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}[suffix]
    return int(text)


@functools.cache
def _choices(version: str) -> Mapping[str, tuple[str, ...]]:
    """Destination -> the choices of each option whose choices are names (the release's
    ``facts.json``); options with numeric choices (an ``int`` type) are left out."""
    out: dict[str, tuple[str, ...]] = {}
    for spec in versions.facts(version).serve_options.values():
        choices = spec.get("choices")
        if choices and not any(str(c).lstrip("-").isdigit() for c in choices):
            out[str(spec["dest"])] = tuple(str(c) for c in choices)
    return out


def not_a_choice(dest: str, text: str, version: str) -> str | None:
    """argparse's ``_check_value``: why the value of an option with choices is refused
    (``invalid choice``, exit 2), or None. vLLM's type runs first and lowers the text for
    some options (``--moe-backend``), which the facts do not record, so only a value that
    matches no choice in any case is refused; ``None`` stands for None. The parser calls
    it for single values (a list option's values are not checked)."""
    choices = _choices(version).get(dest)
    if choices is None or text.lower() in {c.lower() for c in choices}:
        return None
    return f"invalid choice: {text!r} (choose from {', '.join(choices)})"


__all__ = ["human_readable_int", "not_a_choice"]
