"""The real-file corpus (tests/realworld): every file is kept unmodified, and kvconfig
reads each one as its runtime does. A file kvconfig still reads wrong is a strict xfail
whose reason says what is wrong, so the figure stays visible."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
import yaml

from kvconfig.errors import InputError
from kvconfig.load.engines import engines_in
from kvconfig.load.reading import reading_of

ROOT = Path(__file__).parent / "realworld"
ENTRIES: list[dict[str, Any]] = yaml.safe_load((ROOT / "corpus.yaml").read_text())
FIELDS = {
    "role": "role",
    "replicas": "replicas",
    "model": "model",
    "model_uri": "model_uri",
    "tp": "tensor",
    "pp": "pipeline",
    "dp": "data",
    "block_size": "block_size",
    "speculative": "speculative",
    "connector": "connector",
    "kv_role": "kv_role",
}


def _param(entry: dict[str, Any]) -> Any:
    marks = []
    if "misread" in entry:
        marks.append(pytest.mark.xfail(reason=entry["misread"], strict=True))
    return pytest.param(entry, id=entry["file"], marks=marks)


def test_corpus_size() -> None:
    files = {
        p.relative_to(ROOT / "files").as_posix() for p in (ROOT / "files").rglob("*") if p.is_file()
    }
    assert files == {e["file"] for e in ENTRIES}
    assert len(files) >= 80
    assert len({e["repository"] for e in ENTRIES}) >= 12


@pytest.mark.parametrize("entry", [pytest.param(e, id=e["file"]) for e in ENTRIES])
def test_provenance(entry: dict[str, Any]) -> None:
    path = ROOT / "files" / entry["file"]
    assert entry["file"] == f"{entry['repository']}/{entry['path']}"
    assert len(entry["commit"]) == 40
    assert entry["licence"] == "Apache-2.0"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == entry["sha256"]


def _reading(entry: dict[str, Any]) -> list[dict[str, Any]]:
    engines = engines_in(ROOT / "files" / entry["file"], entry["file"])
    readings = []
    for engine in engines:
        r = reading_of(engine).to_json()
        assert r["unreadable"] is None, r["unreadable"]
        readings.append({k: r[v] for k, v in FIELDS.items()})
    return readings


def _key(engine: dict[str, Any]) -> tuple[str, ...]:
    return tuple(str(engine.get(k)) for k in FIELDS)


@pytest.mark.parametrize("entry", [_param(e) for e in ENTRIES])
def test_reading(entry: dict[str, Any]) -> None:
    if entry["verdict"] == "refused":
        with pytest.raises(InputError):
            engines_in(ROOT / "files" / entry["file"], entry["file"])
        return
    got = _reading(entry)
    want = entry["engines"]
    assert len(got) == len(want), f"{len(got)} engines read, {len(want)} expected"
    checked = [{k: g[k] for k in w} for g, w in zip(got, want, strict=True)]
    assert sorted(checked, key=_key) == sorted(want, key=_key)


BASE_REFS = [
    # (service, its spec.baseRefs config, the reading of the two together)
    (
        "kserve/kserve/docs/samples/llmisvc/e2e-gpt-oss/inference_pd_disaggregation.yaml",
        "kserve/kserve/docs/samples/llmisvc/e2e-gpt-oss/llmisvc_config_pd_disagg.yaml",
        [("decode", "NixlConnector", "kv_consumer"), ("prefill", "NixlConnector", "kv_producer")],
    ),
    (
        "kserve/kserve/docs/samples/llmisvc/e2e-gpt-oss/inference_prefix_cache.yaml",
        "kserve/kserve/docs/samples/llmisvc/e2e-gpt-oss/llmisvc_config_prefix_cache.yaml",
        [(None, None, None)],
    ),
]


@pytest.mark.parametrize(("service", "config", "want"), BASE_REFS, ids=[b[0] for b in BASE_REFS])
def test_base_refs(service: str, config: str, want: list[tuple[str | None, ...]]) -> None:
    """A service and the LLMInferenceServiceConfig it names in spec.baseRefs, given
    together, are read as KServe merges them (the service over the config)."""
    text = (
        (ROOT / "files" / config).read_text() + "\n---\n" + (ROOT / "files" / service).read_text()
    )
    readings = [reading_of(e) for e in engines_in(text, "<both>")]
    got = sorted((r.role, r.connector, r.kv_role) for r in readings)
    assert got == sorted(want, key=str)


def _kv_routers(entry: dict[str, Any]) -> list[tuple[str, Any]]:
    """The manifest's KV-aware routers as (kind, block size): Dynamo's frontend in kv mode
    (block size None: it takes the workers'), llm-d's endpoint picker."""
    out = []
    for r in entry.get("routers", []):
        if r["kind"] == "dynamo-frontend" and r.get("mode") == "kv":
            out.append(("dynamo", r["block_size"] if r["block_size"] != "workers" else None))
        elif r["kind"] == "llm-d-epp":
            out.append(("llm-d", r["block_size"]))
    return out


@pytest.mark.parametrize("entry", [pytest.param(e, id=e["file"]) for e in ENTRIES])
def test_routers(entry: dict[str, Any]) -> None:
    """The KV-aware routers each file deploys beside its engines, with their block size."""
    from kvconfig.load.routers import routers_of

    try:
        docs = list(yaml.safe_load_all((ROOT / "files" / entry["file"]).read_text()))
    except yaml.YAMLError:
        docs = []  # not YAML (a broken file, a chart template): no router either
    got = [(r.kind, r.block_size) for r in routers_of(docs)]
    assert got == _kv_routers(entry)


QWEN3_8B = Path(__file__).parent.parent / "examples" / "models" / "qwen3-8b"
#: Model ids and mounts of the corpus whose config.json is bundled (examples/models): the
#: fleets of these files are linted here, offline.
BUNDLED = {"Qwen/Qwen3-8B": QWEN3_8B, "/models/Qwen3-8B": QWEN3_8B}


def _fleets() -> list[Any]:
    out = []
    for e in ENTRIES:
        engines = e.get("engines") or []
        if len(engines) > 1 and all(x.get("model") in BUNDLED for x in engines):
            out.append(pytest.param(e, id=e["file"]))
    return out


@pytest.mark.parametrize("entry", _fleets())
def test_fleet_lints(entry: dict[str, Any]) -> None:
    """Every multi-engine file whose model is bundled lints as one fleet, with its P/D
    pairs: each engine keeps its role (planned for vLLM 0.33.0, the release kvconfig has
    data for, whatever the image)."""
    import io
    import json

    from kvconfig.cli.commands import main

    maps = [a for m, d in BUNDLED.items() for a in ("--model-path", f"{m}={d}")]
    argv = [
        "lint", "--fleet", "--format", "json", "--platform", "H100",
        "--vllm-version", "0.33.0", *maps, str(ROOT / "files" / entry["file"]),
    ]  # fmt: skip
    out = io.StringIO()
    code = main(argv, stdout=out)
    assert code in (0, 1), out.getvalue()
    doc = json.loads(out.getvalue())
    want_roles = sorted(str(x["role"]) for x in entry["engines"])
    assert sorted(str(e["role"]) for e in doc["engines"]) == want_roles
