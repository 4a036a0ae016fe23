"""Every operator example reads to its recorded engines (tests/golden/inputs/*.json).

Re-record with ``python tests/golden/record_inputs.py`` when a reader is meant to read
differently, and say which engines changed and why in the commit message.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.golden import record_inputs as record

EXAMPLES = record.examples()


def test_every_format_has_an_example() -> None:
    from kvconfig.load.engines import kind_of
    from kvconfig.load.yamlfile import parse_all

    kinds = set()
    for path in EXAMPLES:
        docs = parse_all(path.read_text(encoding="utf-8"), path.name)
        for doc in docs:
            kind = kind_of(doc.data)
            if kind == "kubernetes":
                kind = f"kubernetes/{doc.data['kind']}"
            kinds.add(kind)
    assert {
        "kubernetes/Deployment", "kubernetes/LeaderWorkerSet", "kubernetes/Job",
        "kubernetes/StatefulSet", "kubernetes/LLMInferenceService",
        "kubernetes/DynamoGraphDeployment", "kubernetes/InferenceService",
        "production-stack", "llm-d", "compose", "skypilot", "rayserve",
    } <= kinds  # fmt: skip


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_golden_engines_hold(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(record.ROOT)
    want = json.loads(record.golden_path(path).read_text(encoding="utf-8"))
    got = json.loads(json.dumps(record.record_one(path)))
    assert got == want


def test_every_example_parses_and_its_models_resolve_locally_or_are_ids() -> None:
    # vLLM's parser accepts every engine's arguments, and every local model path maps to
    # a bundled folder with --model-path /mnt/models=examples/models
    from kvconfig.load.argv import parse_serve_args
    from kvconfig.load.hub import ModelPaths, is_hub_id

    rules = ModelPaths.parse([f"/mnt/models={record.ROOT / 'examples' / 'models'}"])
    for path in EXAMPLES:
        for engine in record.record_one(path):
            args = parse_serve_args(engine["argv"], entry=engine["parser"], source=path.name)
            model = args.model or ""
            if model.startswith("/mnt/models/"):
                mapped = rules.map(model)
                assert mapped is not None and (mapped / "config.json").is_file(), model
            else:
                assert model == "/mnt/models" or is_hub_id(model), (path.name, model)
