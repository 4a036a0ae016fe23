"""Fuzzing the loaders through the CLI: whatever the bytes, kvconfig answers 0, 1 or 2.

Random bytes, YAML-looking text, and mutations of the shipped examples (as text, and as
data: keys dropped, values replaced by odd ones, models' config.json values broken) all
go through ``kvconfig.cli.main`` in-process. Only ``SystemExit`` may escape; exit 2 comes
with exactly one line on stderr; nothing else prints on stderr; stdout is empty or a
complete report. An internal error (kvconfig's own failure, exit 2 with its line) fails
the property.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import event, given
from hypothesis import strategies as st

from kvconfig.cli import main
from kvconfig.cli.commands import INTERNAL_ERROR

ROOT = Path(__file__).parent.parent.parent
EXAMPLES = ROOT / "examples"
MODELS = EXAMPLES / "models"


def _seed_texts() -> list[str]:
    """The shipped serve configs (model paths made absolute) and native files."""
    texts = []
    for path in sorted(EXAMPLES.glob("*.yaml")) + sorted((EXAMPLES / "native").glob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        texts.append(text.replace("./models/", f"{MODELS}/"))
    return texts


SEEDS = _seed_texts()
SEED_DATA = [yaml.safe_load(t) for t in SEEDS]
MODEL_CONFIGS = {p.parent.name: json.loads(p.read_text()) for p in MODELS.glob("*/config.json")}


WARNING = "kvconfig: warning: "


def run(argv: list[str]) -> tuple[int, str, str]:
    """``main`` in-process; returns (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(argv, stdout=out)
    return code, out.getvalue(), err.getvalue()


def check(code: int, out: str, err: str) -> None:
    """The contract every input must keep.

    Exit 2: one stderr line per problem, and nothing else there but the warning line of
    each deployment whose verdict is unknown (KV401, KV402, KV403). A usage error prints
    nothing on stdout; ``lint`` prints its complete report, with one error entry for
    each problem line. Exit 0 or 1: the warning lines only.
    """
    event(f"exit {code}")
    assert code in (0, 1, 2), err
    assert "Traceback" not in err and INTERNAL_ERROR not in err, err
    assert err == "" or err.endswith("\n"), err
    lines = err.splitlines()
    assert all(line.startswith("kvconfig: ") for line in lines), err
    warned = [x for x in lines if x.startswith(WARNING) and ": verdict unknown, " in x]
    if warned:
        event("warned: verdict unknown")
    problems = [x for x in lines if x not in warned]
    if code == 2:
        if out:
            assert len(problems) == _error_entries(out), (err, out)
        else:
            assert len(problems) == 1, err
    else:
        assert problems == [], err


def _error_entries(out: str) -> int:
    """How many unreadable deployments a complete lint report (any format) lists."""
    if out.startswith("::") or out == "\n":
        assert all(line.startswith("::") for line in out.splitlines())
        return out.count("title=kvconfig input error::")
    if out.lstrip().startswith(("{", "[")):
        doc = json.loads(out)
        if isinstance(doc, dict) and "runs" in doc:
            return sum(r["ruleId"] == "input-error" for r in doc["runs"][0]["results"])
        docs = doc if isinstance(doc, list) else [doc]
        return sum(d["verdict"] == "error" for d in docs)
    rows = out.splitlines()
    assert re.fullmatch(r"\d+ of \d+ safe", rows[-1]), out
    return sum(r.startswith("error   ") for r in rows)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield tmp_path_factory.mktemp("fuzz")


def lint_bytes(workdir: Path, data: bytes, name: str = "serve.yaml") -> None:
    path = workdir / name
    path.write_bytes(data)
    check(*run(["lint", "--platform", "h200", str(path)]))


# ---------------------------------------------------------------- raw bytes and text

YAMLISH = st.sampled_from(
    [*":-[]{},#&*!|>'\"?%@` \t\n", "\n  ", ": ", "- ", "---\n", "...\n", "<<: ", "~",
     "null", "true", "1e9", "0x1F", "-16", "model", "block-size", "kvconfig: 1", "layers:",
     "speculative-config", "&a ", "*a", "!!python/object:os.system", "\x00", "\ufeff", "é"]
)  # fmt: skip


@given(st.binary(max_size=2048))
def test_random_bytes(workdir: Path, data: bytes) -> None:
    lint_bytes(workdir, data)


@given(st.lists(YAMLISH, max_size=80).map("".join))
def test_yaml_looking_text(workdir: Path, text: str) -> None:
    lint_bytes(workdir, text.encode("utf-8", "surrogatepass"))


# ---------------------------------------------------------------- mutated examples, as text

SNIPPETS = st.sampled_from(
    ["\n", ": ", "- ", "  ", "\t", "[", "]", "{", "}", "'", '"', "#", "&x ", "*x", "0", "-1",
     "99999999999999999999", "block-size: 0\n", "kvconfig: 1\n", "null", "FLASH_ATTENTION",
     "auto", "eagle3", "\n  - count: 2\n", "\xff"]
)  # fmt: skip


@given(st.data())
def test_mutated_examples(workdir: Path, data: st.DataObject) -> None:
    text = data.draw(st.sampled_from(SEEDS))
    for _ in range(data.draw(st.integers(1, 4))):
        n = len(text)
        i = data.draw(st.integers(0, n))
        j = data.draw(st.integers(i, min(n, i + 40)))
        op = data.draw(st.sampled_from(["delete", "insert", "replace", "duplicate", "swap"]))
        if op == "delete":
            text = text[:i] + text[j:]
        elif op == "insert":
            text = text[:i] + data.draw(SNIPPETS) + text[i:]
        elif op == "replace":
            text = text[:i] + data.draw(SNIPPETS) + text[j:]
        elif op == "duplicate":
            text = text[:j] + text[i:j] + text[j:]
        else:
            lines = text.splitlines(keepends=True)
            a = data.draw(st.integers(0, max(0, len(lines) - 1)))
            b = data.draw(st.integers(0, max(0, len(lines) - 1)))
            if lines:
                lines[a], lines[b] = lines[b], lines[a]
            text = "".join(lines)
    lint_bytes(workdir, text.encode("utf-8", "surrogateescape"))


# ---------------------------------------------------------------- mutated examples, as data

ODD_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.sampled_from([0, -1, 1, 3, 16, 64, 128, 1 << 20, 10**12]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(
        ["", "auto", "FLASHINFER", "flash_attn", "TRITON_ATTN", "NOPE", "eagle3", "mtp",
         "ngram", "draft_model", "h200", "b200", "sm120", "fp8", "v1", "v2", "{", "[1,",
         '{"model": 1}', "./models/qwen3-8b", str(MODELS / "qwen3-8b"), "/dev/null", ".", "~"]
    ),
    st.lists(st.integers(-4, 300), max_size=3),
    st.dictionaries(st.sampled_from(["multiple_of", "x", "model", "method"]),
                    st.integers(-2, 300), max_size=2),
)  # fmt: skip
KEYS = st.sampled_from(
    ["model", "block-size", "block_size", "attention-backend", "kv-cache-dtype",
     "speculative-config", "attention-config", "tensor-parallel-size", "hf-overrides",
     "kvconfig", "platform", "layers", "count", "role", "backend", "group", "groups",
     "backends", "sizes", "speculative_method", "runner", "hooks", "env", "method",
     "num_speculative_tokens", "attention_backend", "first_index", "name", "unknown-key"]
)  # fmt: skip


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, (*prefix, i))


def _mutate(doc: Any, data: st.DataObject) -> Any:
    doc = copy.deepcopy(doc)
    for _ in range(data.draw(st.integers(1, 3))):
        paths = list(_paths(doc))
        path = data.draw(st.sampled_from(paths))
        op = data.draw(st.sampled_from(["set", "drop", "add", "wrap"]))
        if not path:
            if op == "set":
                doc = data.draw(ODD_VALUES)
            continue
        parent = doc
        for p in path[:-1]:
            parent = parent[p]
        last = path[-1]
        if op == "set":
            parent[last] = data.draw(ODD_VALUES)
        elif op == "drop":
            del parent[last]
        elif op == "add" and isinstance(parent[last], dict):
            parent[last][data.draw(KEYS)] = data.draw(ODD_VALUES)
        elif op == "add" and isinstance(parent[last], list):
            parent[last].append(data.draw(ODD_VALUES))
        else:
            parent[last] = [parent[last]]
    return doc


@given(st.data())
def test_examples_with_odd_values(workdir: Path, data: st.DataObject) -> None:
    doc = _mutate(data.draw(st.sampled_from(SEED_DATA)), data)
    text = yaml.safe_dump(doc, allow_unicode=True)
    lint_bytes(workdir, text.encode("utf-8"))


@given(st.data())
def test_model_configs_with_odd_values(workdir: Path, data: st.DataObject) -> None:
    """A serve config whose model's (or drafter's) config.json has odd values."""
    target = copy.deepcopy(MODEL_CONFIGS["qwen3-8b"])
    drafter = copy.deepcopy(MODEL_CONFIGS["qwen3-8b-eagle3-angelslim"])
    which = data.draw(st.sampled_from(["target", "drafter"]))
    if which == "target":
        target = _mutate(target, data)
    else:
        drafter = _mutate(drafter, data)
    for name, cfg in (("target", target), ("drafter", drafter)):
        (workdir / name).mkdir(exist_ok=True)
        (workdir / name / "config.json").write_text(json.dumps(cfg), encoding="utf-8")
    serve = (
        f"model: {workdir / 'target'}\nblock-size: 128\nspeculative-config:\n"
        f"  model: {workdir / 'drafter'}\n  method: eagle3\n  num_speculative_tokens: 3\n"
    )
    lint_bytes(workdir, serve.encode("utf-8"))


# ---------------------------------------------------------------- pasted commands

TOKENS = st.sampled_from(
    ["vllm", "serve", str(MODELS / "qwen3-8b"), "--block-size", "--block-size=64", "128", "0",
     "-1", "x", "--attention-backend", "FLASHINFER", "TRITON", "--speculative-config",
     '{"model": "' + str(MODELS / "qwen3-8b-eagle3-angelslim") + '", "method": "eagle3"}',
     '{"method": "eagle3"', "--kv-cache-dtype", "fp8", "--config", "--no-enforce-eager",
     "--enforce-eager", "--speculative-config.method", "eagle3", "VLLM_USE_V2_MODEL_RUNNER=0",
     "VLLM_USE_V2_MODEL_RUNNER=yes", "env", "--", "-", "'", '"', "--tensor-parallel-size", "2"]
)  # fmt: skip


@given(st.lists(TOKENS, max_size=10), st.booleans())
def test_pasted_commands(tokens: list[str], as_one_string: bool) -> None:
    command = ["vllm", "serve", *tokens]
    argv = [" ".join(command)] if as_one_string else command
    check(*run(["lint", "--platform", "h200", "--", *argv]))


# ---------------------------------------------------------------- command lines

FLAGS = st.sampled_from(
    ["lint", "plan", "explain", "export", "catalog", "--platform", "h200", "H300", "sm90,sm100",
     ",", "--env", "VLLM_BATCH_INVARIANT=1", "A", "--format", "json", "sarif", "github",
     "xml", "--hooks", "enforce", "--vllm-version", "0.33.0", "9.9", "--schema", "KV101",
     "KV9", "-o", str(EXAMPLES / "qwen3-8b-eagle3-gh200-triton-64.yaml"),
     str(EXAMPLES / "native"), "--help-me"]
)  # fmt: skip


@given(st.lists(FLAGS, max_size=8))
def test_command_lines(argv: list[str]) -> None:
    if "-o" in argv or "--schema" in argv:
        return  # never write files from a fuzzer
    try:
        result = run(argv)
    except SystemExit as stop:  # --help / --version only
        assert stop.code == 0
        return
    check(*result)
