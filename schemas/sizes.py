"""Kernel-page size declarations, as attention backends state them.

vLLM distinguishes an exact size (``16``: exactly 16-token kernel pages) from
``MultipleOf(16)`` (any multiple of 16). The vote treats the two differently
(an exact int must equal the candidate; a ``MultipleOf`` divides it), so kvconfig
keeps them apart too. In JSON and YAML an exact size is an integer and a
``MultipleOf`` is ``{"multiple_of": n}``.

This module imports nothing heavy: the lint path uses it without pydantic.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar


@dataclass(frozen=True, slots=True)
class MultipleOf:
    """Any kernel page whose token count is a multiple of ``multiple_of``."""

    __pydantic_config__: ClassVar[dict[str, Any]] = {"extra": "forbid"}

    multiple_of: int
    """The base: a page of ``n`` tokens is accepted when ``n % multiple_of == 0``."""

    def __post_init__(self) -> None:
        if isinstance(self.multiple_of, bool) or not isinstance(self.multiple_of, int):
            raise ValueError("multiple_of must be an integer")
        if self.multiple_of < 1:
            raise ValueError("multiple_of must be at least 1")

    def __str__(self) -> str:
        return f"MultipleOf({self.multiple_of})"


KernelSize = int | MultipleOf
"""One entry of a backend's supported kernel block sizes: an exact int or a MultipleOf."""


def accepts(sizes: Iterable[KernelSize], block: int) -> bool:
    """Whether a declaration accepts ``block``-token kernel pages (vLLM's exact rule)."""
    for size in sizes:
        if isinstance(size, int):
            if block == size:
                return True
        elif block % size.multiple_of == 0:
            return True
    return False


def format_sizes(sizes: Iterable[KernelSize]) -> str:
    """The declaration written the way vLLM prints it: ``[16, 32, MultipleOf(64)]``."""
    return "[" + ", ".join(str(s) for s in sizes) + "]"


def size_to_json(size: KernelSize) -> int | dict[str, int]:
    """``16`` or ``{"multiple_of": 16}``."""
    return size if isinstance(size, int) else {"multiple_of": size.multiple_of}


def size_from_json(value: object) -> KernelSize:
    """Inverse of :func:`size_to_json`; raises ValueError on anything else."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    if isinstance(value, dict) and set(value) == {"multiple_of"}:
        return MultipleOf(value["multiple_of"])
    raise ValueError(f"expected a positive integer or {{multiple_of: n}}, got {value!r}")
