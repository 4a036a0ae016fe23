"""The exit-code contract on every reader and command (docs/errors.md), CI subset.

Mutations of the shipped files of every format (``tests.fuzz.contract``) and
Hypothesis-built inputs for ``diff`` and ``explain`` run through ``kvconfig.cli.main``
in-process: exit 0, 1 or 2 only, no traceback, one ``kvconfig: ...`` line per problem on
stderr with exit 2, each input under ``TIME_BOUND`` seconds, and the API raising only
kvconfig's errors. The slow mode (``python -m tests.fuzz``, at least 100,000 inputs per
format) is the same code with more inputs.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz.contract import ALL, FORMATS, REALWORLD, Tally, Workspace, fuzz, mutate
from tests.fuzz.generated import generated

PER_FORMAT = 50
"""Mutated inputs of each format per CI run (derandomized: the same every run)."""

FAST = settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    return Workspace(tmp_path_factory.mktemp("fuzz"))


def _assert_kept(tally: Tally) -> None:
    assert tally.failures == [], "\n".join(tally.failures[:5])
    assert tally.ok()


@pytest.mark.parametrize("fmt", ALL)
def test_mutated_files_keep_the_contract(work: Workspace, fmt: str) -> None:
    tally = fuzz(work, fmt, PER_FORMAT, seed=0)
    assert tally.inputs == PER_FORMAT
    _assert_kept(tally)
    # the mutations reach past the first reader: some inputs still plan (not counted
    # where most seeds are real files whose Hub models are not here: the generated
    # inputs' test checks those formats get past the reader)
    real = fmt in FORMATS and any(p.is_relative_to(REALWORLD) for p in FORMATS[fmt].seeds)
    if fmt not in ("diff", "command") and not real:
        assert set(tally.exits) & {0, 1}, tally.exits


@pytest.mark.parametrize("fmt", ALL)
def test_generated_inputs_keep_the_contract(work: Workspace, fmt: str) -> None:
    tally = generated(work, fmt, PER_FORMAT // 2, seed=0)
    assert tally.inputs == PER_FORMAT // 2
    _assert_kept(tally)
    # well-formed inputs get past the parser: not every one is refused as bad input
    assert set(tally.exits) & {0, 1}, tally.exits


def test_the_operator_formats_seed_from_the_real_file_corpus() -> None:
    for fmt in ("kubernetes", "helm", "kserve", "dynamo", "skypilot", "rayserve"):
        assert any(p.is_relative_to(REALWORLD) for p in FORMATS[fmt].seeds), fmt
    every = {p for f in FORMATS.values() for p in f.seeds}
    # every real file (compose has none in the corpus) seeds some format
    assert set(REALWORLD.rglob("*.y*ml")) <= every


def test_the_checks_can_fail(work: Workspace) -> None:
    """A broken contract is seen: exit 3 from an internal error, and a hang."""
    from tests.fuzz import contract

    tally = Tally()
    real = contract.main

    def crashing(argv: list[str], stdout: object = None) -> int:
        return real(["explain", "KV101", "--no-such-option"]) and 3

    contract.main = crashing  # type: ignore[assignment]
    try:
        work.run("diff", b"{}", 0, tally)
    finally:
        contract.main = real
    assert tally.other_exits == 1
    hang = Tally()

    def slow(argv: list[str], stdout: object = None) -> int:
        time.sleep(0.2)
        return real(argv)

    contract.main = slow  # type: ignore[assignment]
    contract.TIME_BOUND, bound = 0.05, contract.TIME_BOUND
    try:
        work.run("serve", b"model: ./models/deepseek-v3\n", 0, hang)
    finally:
        contract.TIME_BOUND = bound
        contract.main = real
    assert hang.hangs >= 1


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=30,
)
PLAN_KEYS = st.sampled_from(
    ["groups", "engines", "kvconfig_fleet", "kvconfig_digest", "verdict", "block_size",
     "kernel_block_size", "connectors", "name", "findings", "platform", "rank"]
)  # fmt: skip


@FAST
@given(st.dictionaries(PLAN_KEYS, JSON, max_size=6) | JSON)
def test_diff_of_any_json_keeps_the_contract(work: Workspace, doc: object) -> None:
    tally = Tally()
    work.run("diff", json.dumps(doc).encode(), 0, tally)
    _assert_kept(tally)


@FAST
@given(st.binary(max_size=512))
def test_diff_of_any_bytes_keeps_the_contract(work: Workspace, data: bytes) -> None:
    tally = Tally()
    work.run("diff", data, 0, tally)
    _assert_kept(tally)


@FAST
@given(st.text(max_size=12))
def test_explain_of_any_code_keeps_the_contract(work: Workspace, code: str) -> None:
    from kvconfig.cli import main

    tally = Tally()
    work._one("explain", ["explain", code], None, tally, code.encode("utf-8", "replace"))
    _assert_kept(tally)
    assert main(["explain", "KV901"]) == 0


@FAST
@given(st.sampled_from(ALL), st.integers(min_value=0, max_value=2**32))
def test_hypothesis_chosen_mutations_keep_the_contract(
    work: Workspace, fmt: str, seed: int
) -> None:
    rng = random.Random(seed)
    seeds = work.seeds[fmt]
    index = rng.randrange(len(seeds))
    tally = Tally()
    work.run(fmt, mutate(seeds[index], rng, seeds), index, tally)
    _assert_kept(tally)


def test_the_workspace_links_the_models(work: Workspace) -> None:
    assert (work.folder / "models").resolve() == (
        Path(__file__).parent.parent / "examples" / "models"
    ).resolve()


EXAMPLES = Path(__file__).parent.parent / "examples"
FLEET = (EXAMPLES / "fleets" / "correct-pd.yaml").read_bytes()
COMPOSE = (EXAMPLES / "operators" / "qwen3-8b-eagle3-gh200-compose.yaml").read_bytes()
COMMAND = b"command: vllm serve ../models/qwen3-8b --block-size 64"

#: Inputs that broke the contract once (found by the fuzzer), each now bad input.
FOUND = {
    "fleet-huge-pipeline": (
        "fleet",
        FLEET.replace(COMMAND, COMMAND + b"\n    parallelism: {pipeline: 999999999999}", 1),
    ),
    "fleet-unbalanced-quote": ("fleet", FLEET.replace(COMMAND, COMMAND + b" '--x", 1)),
    "diff-groups-not-a-list": ("diff", b'{"groups": true}'),
    "diff-group-id-a-list": ("diff", b'{"groups": [{"id": [1]}]}'),
    # a --model-path target too long for the file system (exit 3: OSError ENAMETOOLONG)
    "compose-model-name-too-long": (
        "compose",
        COMPOSE.replace(
            b"- /mnt/models/qwen3-8b\n", b"- /mnt/models/qwen3-8" + b'{"a":' * 300 + b"\n"
        ),
    ),
}


@pytest.mark.parametrize(("fmt", "data"), FOUND.values(), ids=FOUND)
def test_crashes_the_fuzzer_found_stay_fixed(work: Workspace, fmt: str, data: bytes) -> None:
    tally = Tally()
    work.run(fmt, data, 0, tally)
    _assert_kept(tally)
    assert tally.exits == {2: 1}
