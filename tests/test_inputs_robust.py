"""Whatever an operator file holds, the readers answer with engines or one InputError.

The examples and bad inputs are mutated as text (lines dropped, cut, repeated, swapped,
quotes and expansions inserted); every mutant must read, or fail with an InputError,
never with another exception. And the loader can tell operator files from the files it
already reads.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from kvconfig.errors import InputError
from kvconfig.load import yamlfile
from kvconfig.load.argv import parse_serve_args
from kvconfig.load.engines import engines_in, is_operator_file

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted((ROOT / "examples" / "operators").glob("*.yaml")) + sorted(
    (ROOT / "tests" / "invalid" / "inputs").glob("*.yaml")
)
INSERTS = [
    "'",
    '"',
    "$(",
    "${",
    "{{",
    ":",
    "- ",
    "[",
    "\\",
    "$",
    "`",
    "&",
    "|",
    " 7",
    " null",
    " []",
]


def _mutate(rng: random.Random, text: str) -> str:
    lines = text.splitlines()
    i = rng.randrange(len(lines))
    op = rng.randrange(5)
    if op == 0:
        del lines[i]
    elif op == 1:
        lines[i] = lines[i][: rng.randrange(len(lines[i]) + 1)]
    elif op == 2:
        lines.insert(i, rng.choice(lines))
    elif op == 3:
        j = rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    else:
        k = rng.randrange(len(lines[i]) + 1)
        lines[i] = lines[i][:k] + rng.choice(INSERTS) + lines[i][k:]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("seed", range(4))
def test_mutants_read_or_fail_with_one_input_error(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(250):
        path = rng.choice(FILES)
        text = _mutate(rng, path.read_text(encoding="utf-8"))
        try:
            for engine in engines_in(text, path.name, base=path.parent):
                parse_serve_args(engine.argv, entry=engine.parser, base=Path(engine.base))
        except InputError as err:
            assert "\n" not in str(err)


def test_operator_files_are_told_from_serve_configs_and_native_files() -> None:
    for path in sorted((ROOT / "examples").glob("*.yaml")) + sorted(
        (ROOT / "examples" / "native").glob("*.yaml")
    ):
        assert not is_operator_file(yamlfile.load(path, path.name).data), path.name
    for path in sorted((ROOT / "examples" / "operators").glob("*.yaml")):
        docs = yamlfile.parse_all(path.read_text(encoding="utf-8"), path.name)
        assert all(is_operator_file(d.data) for d in docs), path.name
