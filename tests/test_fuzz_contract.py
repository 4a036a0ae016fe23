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
from tests.fuzz.retyped import NOT_YAML, retyped

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


@pytest.mark.parametrize("fmt", ALL)
def test_retyped_inputs_keep_the_contract(work: Workspace, fmt: str) -> None:
    """A YAML seed with one value of another type (``tests.fuzz.retyped``): every format
    whose inputs are YAML documents gets them, the others none."""
    tally = retyped(work, fmt, PER_FORMAT // 2, seed=0)
    assert tally.inputs == (0 if fmt in NOT_YAML else PER_FORMAT // 2)
    _assert_kept(tally)


def test_the_operator_formats_seed_from_the_real_file_corpus() -> None:
    for fmt in ("kubernetes", "helm", "kserve", "dynamo", "skypilot", "rayserve"):
        assert any(p.is_relative_to(REALWORLD) for p in FORMATS[fmt].seeds), fmt
    every = {p for f in FORMATS.values() for p in f.seeds}
    # every real file (compose has none in the corpus) seeds some format
    assert set(REALWORLD.rglob("*.y*ml")) <= every


def test_the_checks_can_fail(work: Workspace) -> None:
    """A broken contract is seen: an exit other than 0, 1 or 2, an internal error, and a hang."""
    from kvconfig.cli import commands
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
    internal = Tally()
    handlers = commands._HANDLERS

    def broken(*_: object) -> tuple[str, int]:
        raise ZeroDivisionError("division by zero")

    saved = handlers["diff"]
    handlers["diff"] = broken
    try:
        work.run("diff", b"{}", 0, internal)
    finally:
        handlers["diff"] = saved
    assert internal.exits == {2: 1} and internal.other_exits == 1
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


def _example(name: str, old: bytes, new: bytes) -> bytes:
    """The example file ``name`` with ``old`` (which it holds) replaced by ``new``."""
    data = (EXAMPLES / name).read_bytes()
    assert old in data, (name, old)
    return data.replace(old, new, 1)


FLEET = (EXAMPLES / "fleets" / "correct-pd.yaml").read_bytes()
COMMAND = b"command: vllm serve ../models/qwen3-8b --block-size 64"
COMPOSE = "operators/qwen3-8b-eagle3-gh200-compose.yaml"
STACK = "operators/qwen3-8b-eagle3-gh200-production-stack.yaml"
LLM_D = "operators/llm-d-modelservice-values.yaml"
KSERVE = "operators/kserve-llminferenceservice.yaml"
STORM = (
    Path(__file__).parent
    / "realworld/files/vllm-project/aibrix/brixbench/benchmark/testdata/deployments/aibrix"
    / "models/qwen3-8b-pd-1p1d-tp2-vke-comparison.yaml"
)


def _corpus_with(path: str, kind: str | None, keys: tuple[str | int, ...], value: object) -> bytes:
    """The real-file corpus's ``path`` with ``keys`` of its first ``kind`` (None: its first
    document) set to ``value``."""
    import yaml

    docs = list(yaml.safe_load_all((REALWORLD / path).read_text()))
    node = next(d for d in docs if d and (kind is None or d.get("kind") == kind))
    for key in keys[:-1]:
        node = node[key]
    node[keys[-1]] = value
    return yaml.safe_dump_all(docs, sort_keys=False).encode()


#: Inputs that broke the contract once (found by the fuzzer), and the exit code each has
#: now (2: bad input; 1: vLLM refuses the deployment).
FOUND = {
    "fleet-huge-pipeline": (
        "fleet",
        FLEET.replace(COMMAND, COMMAND + b"\n    parallelism: {pipeline: 999999999999}", 1),
        2,
    ),
    "fleet-unbalanced-quote": ("fleet", FLEET.replace(COMMAND, COMMAND + b" '--x", 1), 2),
    "diff-groups-not-a-list": ("diff", b'{"groups": true}', 2),
    "diff-group-id-a-list": ("diff", b'{"groups": [{"id": [1]}]}', 2),
    # a --model-path target too long for the file system (exit 3: OSError ENAMETOOLONG)
    "compose-model-name-too-long": (
        "compose",
        _example(
            COMPOSE, b"- /mnt/models/qwen3-8b\n", b"- /mnt/models/qwen3-8" + b'{"a":' * 300 + b"\n"
        ),
        2,
    ),
    # exit 3, TypeError: volumes that are not a list (compose refuses them; kvconfig reads
    # no bind mount from them, and the model is then found through --model-path)
    "compose-volumes-a-number": (
        "compose",
        _example(COMPOSE, b"volumes:\n      - ../models:/mnt/models:ro", b"volumes: 128"),
        0,
    ),
    # exit 3, TypeError: a StormService whose replicas is a mapping
    "kubernetes-storm-replicas-a-mapping": (
        "kubernetes",
        (STORM.read_bytes()).replace(b"\n  replicas: 1\n", b"\n  replicas: {a: 1}\n", 1),
        2,
    ),
    # exit 3, TypeError: a node affinity term whose matchExpressions is not a list (the API
    # server refuses it; kvconfig reads no GPU from it)
    "kubernetes-match-expressions-a-number": (
        "kubernetes",
        _corpus_with(
            "vllm-project/aibrix/test/regression/v0.3.0/aibrix_naive_prefix_cache.yaml",
            "Deployment",
            (
                "spec",
                "template",
                "spec",
                "affinity",
                "nodeAffinity",
                "requiredDuringSchedulingIgnoredDuringExecution",
                "nodeSelectorTerms",
                0,
                "matchExpressions",
            ),
            2**63,
        ),
        0,
    ),
    # exit 3, TypeError: an llmaz Playground's backendRuntimeConfig.args not a list, a KServe
    # LLMInferenceService's container env not a list, a DisaggregatedSet's roles not a list
    # (the API server refuses each; found by replacing the corpus files' lists by scalars)
    "kubernetes-llmaz-args-a-boolean": (
        "kubernetes",
        _corpus_with(
            "InftyAI/llmaz/docs/examples/runai-streamer/playground-streaming-from-s3.yaml",
            "Playground",
            ("spec", "backendRuntimeConfig", "args"),
            True,
        ),
        2,
    ),
    "kserve-env-a-number": (
        "kserve",
        _corpus_with(
            "kserve/kserve/docs/samples/llmisvc/speculative-decoding/"
            "llm-inference-service-H100-mtp.yaml",
            "LLMInferenceService",
            ("spec", "template", "containers", 0, "env"),
            5,
        ),
        2,
    ),
    "kubernetes-llmaz-model-claims-a-number": (
        "kubernetes",
        _corpus_with(
            "InftyAI/llmaz/docs/examples/speculative-decoding/vllm/playground.yaml",
            "Playground",
            ("spec", "modelClaims", "models"),
            5,
        ),
        2,
    ),
    "kserve-object-store-a-number": (
        "kserve",
        _corpus_with(
            "kserve/kserve/docs/samples/llmisvc/kv-cache-offloading/"
            "llm-inference-service-kv-cache-offloading-tiered.yaml",
            "LLMInferenceService",
            ("spec", "kvCacheOffloading", "objectStore"),
            5,
        ),
        0,
    ),
    "kubernetes-llmd-benchmark-context-ranges-a-number": (
        "kubernetes",
        _corpus_with(
            "llm-d/llm-d-benchmark/config/scenarios/examples/gpu.yaml",
            None,
            ("scenario", 0, "modelservice", "decode", "contextLengthRanges"),
            5,
        ),
        0,
    ),
    "skypilot-any-of-a-number": (
        "skypilot",
        _corpus_with(
            "skypilot-org/skypilot/llm/deepseek-r1/deepseek-r1-671B.yaml",
            None,
            ("resources", "any_of"),
            5,
        ),
        2,
    ),
    # exit 3, TypeError: a MultiConnector whose connectors are not a list (found by the
    # retyped inputs, tests.fuzz.retyped)
    "fleet-multiconnector-connectors-a-number": (
        "fleet",
        _example(
            "fleets/multiconnector-layouts.yaml",
            b"        connectors:\n"
            b"          - {kv_connector: NixlConnector, kv_role: kv_producer}\n"
            b"          - {kv_connector: ExampleHiddenStatesConnector, kv_role: kv_producer}\n",
            b"        connectors: 5\n",
        ),
        0,
    ),
    # exit 3, TypeError: a configMapKeyRef whose key is a list (unhashable)
    "kubernetes-config-map-key-a-list": (
        "kubernetes",
        (REALWORLD / "vllm-project/router/scripts/deepseek/vllm-deepseek-deployment.yaml")
        .read_bytes()
        .replace(
            b"name: vllm-config\n              key: MODEL",
            b"name: vllm-config\n              key: [MODEL]",
            1,
        ),
        0,
    ),
    "kubernetes-disaggregated-set-roles-a-number": (
        "kubernetes",
        _corpus_with(
            "llm-d/llm-d/guides/wide-ep-lws/modelserver/gpu/vllm/disaggregatedset/smoke/"
            "disaggregatedset-smoke.yaml",
            "DisaggregatedSet",
            ("spec", "roles"),
            5,
        ),
        2,
    ),
    # exit 3, TypeError: an offloading connector's secondary_tiers that is not a list
    "fleet-secondary-tiers-a-number": (
        "fleet",
        _example(
            "fleets/offload-tiers.yaml",
            b"secondary_tiers: [{type: fs, root_dir: /mnt/kv-cache}]",
            b"secondary_tiers: 5",
        ),
        1,  # the example's own verdict
    ),
    # exit 3, RecursionError: a repository configuration nested too deeply for tomllib
    "repo-nested-too-deeply": ("repo", b"platforms = " + b"[" * 1000 + b"]" * 1000 + b"\n", 2),
    # exit 3, RuntimeError: a bind mount from the home of a user that does not exist
    "compose-volume-home-of-no-user": (
        "compose",
        _example(COMPOSE, b"- ../models:/mnt/models:ro", b"- ~../models:/mnt/models:ro"),
        0,
    ),
    # exit 3, AttributeError: production-stack's lmcacheConfig not a mapping
    "helm-lmcache-config-a-number": (
        "helm",
        _example(
            STACK, b"      replicaCount: 1\n", b"      replicaCount: 1\n      lmcacheConfig: 1.5\n"
        ),
        1,  # the example's own verdict (its drafter's backend is rejected)
    ),
    # exit 3, TypeError: llm-d's container args and env not lists
    "helm-llm-d-args-a-boolean": (
        "helm",
        _example(LLM_D, b'args: ["--block-size", "64"]', b"args: true"),
        2,
    ),
    "helm-llm-d-env-a-number": (
        "helm",
        _example(
            LLM_D, b'args: ["--block-size", "64"]', b'args: ["--block-size", "64"]\n      env: 5'
        ),
        2,
    ),
    # exit 3, TypeError: KServe container args not a list
    "kserve-args-a-number": (
        "kserve",
        _example(KSERVE, b'args: ["--enforce-eager"]', b"args: 1.5"),
        2,
    ),
    # exit 3, ValueError: --prefix-match-unit that vLLM's parser refuses
    "fleet-match-unit-not-a-number": (
        "fleet",
        _example(
            "fleets/llm-d-prefix-hashing.yaml",
            b"--prefix-match-unit 32",
            b"--prefix-match-unit 1e32",
        ),
        2,
    ),
    # exit 3, ValueError: an offloading chunk vLLM's int() refuses (vLLM refuses the engine)
    "fleet-offload-chunk-not-a-number": (
        "fleet",
        _example("fleets/offload-tiers.yaml", b"block_size: 100", b"block_size: 1e300"),
        1,
    ),
}


@pytest.mark.parametrize(("fmt", "data", "code"), FOUND.values(), ids=FOUND)
def test_crashes_the_fuzzer_found_stay_fixed(
    work: Workspace, fmt: str, data: bytes, code: int
) -> None:
    tally = Tally()
    work.run(fmt, data, 0, tally)
    _assert_kept(tally)
    assert tally.exits == {code: 1}, work.last_stderr
