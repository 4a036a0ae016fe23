"""A bad ``config.json`` value is blamed on the key it was read from.

Each integer of every bundled model's ``config.json`` is replaced by a bad value (0, a
negative number, a boolean, a string, a float). Deriving the model's layers then either
fails with an ``InputError`` naming that very key, or ignores the key and derives layers
whose integers are all positive: a derived value is never blamed on another key, and a
bad one never reaches the plan.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kvconfig.derive import layers as derive_layers
from kvconfig.derive.inputs import Context, Model
from kvconfig.errors import InputError, UnsupportedArchitecture

MODELS = Path(__file__).resolve().parents[1] / "examples" / "models"
BAD_VALUES = (0, -3, True, "7", 2.5)
INT_FIELDS = ("count", "first_index", "num_heads", "num_kv_heads", "head_size", "sliding_window")


def _int_keys(cfg: dict[str, Any], path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for key, value in cfg.items():
        if isinstance(value, dict):
            yield from _int_keys(value, (*path, key))
        elif isinstance(value, int) and not isinstance(value, bool):
            yield (*path, key)


def _cases() -> list[tuple[str, tuple[str, ...]]]:
    out = []
    for folder in sorted(p for p in MODELS.iterdir() if p.is_dir()):
        cfg = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        out += [(folder.name, path) for path in _int_keys(cfg)]
    return out


@pytest.mark.parametrize(
    ("model", "path"), _cases(), ids=lambda x: x if isinstance(x, str) else ".".join(x)
)
def test_a_bad_value_is_blamed_on_its_own_key(model: str, path: tuple[str, ...]) -> None:
    base = json.loads((MODELS / model / "config.json").read_text(encoding="utf-8"))
    draft = "eagle" in model
    for bad in BAD_VALUES:
        cfg = copy.deepcopy(base)
        node = cfg
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = bad
        m = Model(str(MODELS / model / "config.json"), cfg)
        try:
            sets = derive_layers.derive(m, "bfloat16", draft=draft, context=Context())
        except UnsupportedArchitecture:
            continue
        except InputError as err:
            assert err.key == path[-1], (bad, err.key, err.message)
            continue
        for s in sets:
            for name in INT_FIELDS:
                value = s.get(name)
                if value is None and name == "sliding_window":
                    continue
                low = 0 if name == "first_index" else 1
                assert isinstance(value, int) and not isinstance(value, bool), (bad, name, value)
                assert value >= low, (bad, name, value)
