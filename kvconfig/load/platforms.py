"""GPU names, ``smXY`` and ``X.Y`` capabilities, turned into platforms.

Capabilities are NVIDIA's published compute capabilities; AMD's are what PyTorch
reports for the gfx target (vLLM's ROCm platform passes them through).
"""

from __future__ import annotations

import functools
import re

from kvconfig.errors import InputError
from kvconfig.mirror.platform import PlatformId

_CUDA: dict[str, tuple[int, int]] = {
    "V100": (7, 0),
    "T4": (7, 5),
    "RTX 2080 Ti": (7, 5),
    "A100": (8, 0),
    "A800": (8, 0),
    "A30": (8, 0),
    "A10": (8, 6),
    "A10G": (8, 6),
    "A16": (8, 6),
    "A40": (8, 6),
    "RTX A6000": (8, 6),
    "RTX 3090": (8, 6),
    "L4": (8, 9),
    "L20": (8, 9),
    "L40": (8, 9),
    "L40S": (8, 9),
    "RTX 4090": (8, 9),
    "RTX 6000 Ada": (8, 9),
    "H100": (9, 0),
    "H800": (9, 0),
    "H20": (9, 0),
    "H200": (9, 0),
    "GH200": (9, 0),
    "B100": (10, 0),
    "B200": (10, 0),
    "GB200": (10, 0),
    "B300": (10, 3),
    "GB300": (10, 3),
    "Jetson Thor": (11, 0),
    "RTX PRO 6000": (12, 0),
    "RTX PRO 6000 Blackwell": (12, 0),
    "RTX 5090": (12, 0),
    "RTX 5080": (12, 0),
    "GB10": (12, 1),
    "DGX Spark": (12, 1),
}

_ROCM: dict[str, tuple[int, int]] = {
    "MI210": (9, 0),
    "MI250": (9, 0),
    "MI250X": (9, 0),
    "MI300A": (9, 4),
    "MI300X": (9, 4),
    "MI308X": (9, 4),
    "MI325X": (9, 4),
    "MI350X": (9, 5),
    "MI355X": (9, 5),
}

_GFX: dict[str, tuple[int, int]] = {"gfx90a": (9, 0), "gfx942": (9, 4), "gfx950": (9, 5)}


def _key(text: str) -> str:
    return re.sub(r"[\s_\-]+", "", text).lower()


_BY_KEY: dict[str, PlatformId] = {
    **{_key(n): PlatformId(n, "cuda", c) for n, c in _CUDA.items()},
    **{_key(n): PlatformId(n, "rocm", c) for n, c in _ROCM.items()},
    **{_key(n): PlatformId(n, "rocm", c) for n, c in _GFX.items()},
    "cpu": PlatformId("CPU", "cpu", None),
    "xpu": PlatformId("XPU", "xpu", None),
}

_SM = re.compile(r"^sm_?(\d{2,3})[af]?$")
_CAP = re.compile(r"^(\d{1,2})\.(\d)$")


def known_names() -> list[str]:
    """Every GPU name kvconfig knows, for help texts and suggestions."""
    return [*_CUDA, *_ROCM, *_GFX, "cpu", "xpu"]


@functools.lru_cache(maxsize=256)
def parse_platform(text: str) -> PlatformId:
    """One platform from a GPU name, ``smXY`` or ``X.Y``; raises InputError otherwise."""
    raw = text.strip()
    key = _key(raw)
    if key in _BY_KEY:
        return _BY_KEY[key]
    if m := _SM.match(key):
        digits = m.group(1)
        major, minor = int(digits[:-1]), int(digits[-1])
        if major < 7 or major > 12:
            raise InputError(
                f"unknown compute capability sm{digits}",
                key="--platform",
                hint="expected sm70 to sm121, e.g. sm90, sm100, sm103 or sm120",
            )
        return PlatformId(f"sm{digits}", "cuda", (major, minor))
    if m := _CAP.match(raw):
        major, minor = int(m.group(1)), int(m.group(2))
        if major < 7 or major > 12:
            raise InputError(
                f"unknown compute capability {raw}",
                key="--platform",
                hint="expected 7.0 to 12.1, e.g. 9.0, 10.0, 10.3 or 12.0",
            )
        return PlatformId(f"sm{major}{minor}", "cuda", (major, minor))
    suggestion = _suggest(raw)
    hint = (
        f"did you mean {suggestion!r}?"
        if suggestion
        else "expected a GPU name such as H100, H200, B200 or MI300X, an smXY or an X.Y"
    )
    raise InputError(f"unknown platform {raw!r}", key="--platform", hint=hint)


def _suggest(raw: str) -> str | None:
    """The one known GPU name closest to ``raw``; None when none is, or several tie."""
    import difflib

    names = {_key(n): n for n in known_names()}
    key = _key(raw)
    scores = sorted(
        ((difflib.SequenceMatcher(None, key, k).ratio(), n) for k, n in names.items()),
        reverse=True,
    )
    best, runner_up = scores[0], scores[1]
    if best[0] < 0.6 or best[0] == runner_up[0]:
        return None
    return best[1]


def parse_platforms(text: str) -> list[PlatformId]:
    """A comma-separated list of platforms (one lint per fleet)."""
    items = [t for t in (p.strip() for p in text.split(",")) if t]
    if not items:
        raise InputError("empty platform list", key="--platform", hint="e.g. --platform h200,b200")
    return [parse_platform(t) for t in items]
