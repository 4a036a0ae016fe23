"""vLLM's own types of ``vllm serve`` option values, as its parser converts them
(``vllm/utils/argparse_utils.py``: ``human_readable_int``)."""

from __future__ import annotations

import re

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


__all__ = ["human_readable_int"]
