"""Fleets offline: every example fleet gives its findings, its fixes hold, its JSON is the
documented shape, and bad fleet files are one-line input errors."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from kvconfig.codes import FindingCode
from kvconfig.errors import InputError
from kvconfig.fleet import fleet_document, lint_fleet, plan_fleet
from kvconfig.fleet import planner as P
from kvconfig.fleet import read as fleet_read

ROOT = Path(__file__).resolve().parent.parent
FLEETS = ROOT / "examples" / "fleets"
SCHEMAS = ROOT / "schemas" / "json"

#: example -> (verdict, [(code, engines)]), findings in report order.
EXPECTED: dict[str, tuple[str, list[tuple[str, tuple[str, ...]]]]] = {
    "correct-pd": ("ok", []),
    "dynamo-router-16": ("reject", [("KV711", ("worker",))]),
    "llm-d-prefix-hashing": (
        "reject",
        [
            ("KV712", ("cbor-hash",)),
            ("KV712", ("default-seed",)),
            ("KV715", ("unit-32",)),
        ],
    ),
    "mooncake-bp-lt-bd": ("reject", [("KV710", ("prefill", "decode"))]),
    "multiconnector-layouts": ("reject", [("KV716", ("prefill",))]),
    "nixl-28661-block-128": ("reject", [("KV703", ("decode-h100", "prefill-b200"))]),
    "nixl-41037-tp-pair": (
        "reject",
        [("KV703", ("decode-tp8", "prefill-dp8")), ("KV709", ("prefill-dp8", "decode-tp8"))],
    ),
    "nixl-bhlnc-tp-pair": ("reject", [("KV722", ("decode-tp1", "prefill-tp2"))]),
    "nixl-global-vote": (
        "reject",
        [
            ("KV720", ("decode-tp2", "prefill-tp1")),
            ("KV701", ("prefill-tp1",)),
            ("KV701", ("decode-tp2",)),
        ],
    ),
    "nixl-host-buffer": ("reject", [("KV705", ("decode-b200", "prefill-h100"))]),
    "nixl-layouts": ("reject", [("KV718", ("decode", "prefill-nhd"))]),
    "nixl-mamba-conv-layout": ("reject", [("KV702", ("prefill",))]),
    "nixl-mamba-pages": ("reject", [("KV707", ("decode-flash-attn", "prefill-flashinfer"))]),
    "nixl-region-mapped": ("reject", [("KV706", ("decode-flash-attn", "prefill-flashinfer"))]),
    "nixl-tp-split": ("reject", [("KV704", ("decode-tp1", "prefill-tp2"))]),
    "offload-tiers": (
        "reject",
        [
            ("KV713", ("batch-64",)),
            ("KV714", ("chat-64", "chat-128")),
            ("KV721", ("xxhash-64",)),
        ],
    ),
    "pipeline-stages": ("ok", [("KV717", ("server",))]),
    "two-gpu-generations": ("reject", [("KV708", ("decode-b200", "prefill-h100"))]),
}

#: The rules of the fleet issue, and the example fleet that shows each.
RULES = {
    "KV701": "nixl-global-vote",
    "KV702": "nixl-mamba-conv-layout",
    "KV703": "nixl-28661-block-128",
    "KV704": "nixl-tp-split",
    "KV705": "nixl-host-buffer",
    "KV706": "nixl-region-mapped",
    "KV707": "nixl-mamba-pages",
    "KV708": "two-gpu-generations",
    "KV709": "nixl-41037-tp-pair",
    "KV710": "mooncake-bp-lt-bd",
    "KV711": "dynamo-router-16",
    "KV712": "llm-d-prefix-hashing",
    "KV713": "offload-tiers",
    "KV714": "offload-tiers",
    "KV715": "llm-d-prefix-hashing",
    "KV716": "multiconnector-layouts",
    "KV717": "pipeline-stages",
    "KV718": "nixl-layouts",
    "KV720": "nixl-global-vote",
    "KV721": "offload-tiers",
    "KV722": "nixl-bhlnc-tp-pair",
}

_DOCS: dict[str, dict[str, Any]] = {}


def doc_of(name: str) -> dict[str, Any]:
    if name not in _DOCS:
        _DOCS[name] = fleet_document([str(FLEETS / f"{name}.yaml")])
    return _DOCS[name]


def test_every_example_is_listed() -> None:
    assert sorted(p.stem for p in FLEETS.glob("*.yaml")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_findings(name: str) -> None:
    verdict, findings = EXPECTED[name]
    doc = doc_of(name)
    assert doc["verdict"] == verdict
    assert [(f["code"], tuple(f["engines"])) for f in doc["findings"]] == findings


def test_every_fleet_code_has_an_example() -> None:
    fleet_codes = {c.value for c in FindingCode if c.value.startswith("KV7")} - {"KV719"}
    assert set(RULES) == fleet_codes
    for code, example in RULES.items():
        assert code in {f["code"] for f in doc_of(example)["findings"]}, code


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_findings_say_what_vllm_does(name: str) -> None:
    for f in doc_of(name)["findings"]:
        assert f["vllm"].startswith(("raises", "silent", "fails", "the hooks")), f["vllm"]
        assert f["severity"] == FindingCode(f["code"]).severity.value
        if f["severity"] == "error":
            assert f["fixes"], f["code"]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fleet_plan_is_the_documented_shape(name: str) -> None:
    import jsonschema

    doc = doc_of(name)
    schema = json.loads((SCHEMAS / "fleet-plan.schema.json").read_text(encoding="utf-8"))
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(doc)) == []
    plan = plan_fleet([str(FLEETS / f"{name}.yaml")])
    assert plan.model_dump(mode="json", by_alias=True)["findings"] == doc["findings"]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_examples_validate_against_the_fleet_schema(name: str) -> None:
    import jsonschema

    schema = json.loads((SCHEMAS / "fleet.schema.json").read_text(encoding="utf-8"))
    data = yaml.safe_load((FLEETS / f"{name}.yaml").read_text(encoding="utf-8"))
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(data)) == []
    assert data["$schema"] == "../../schemas/json/fleet.schema.json"


def _apply_fix(name: str, code: str) -> list[dict[str, Any]]:
    """Replan the example with the first block-size fix of ``code`` on every engine."""
    f = next(x for x in doc_of(name)["findings"] if x["code"] == code)
    fix = next(x for x in f["fixes"] if x.startswith("--block-size "))
    size = int(fix.split()[1])
    fleet = fleet_read.read([str(FLEETS / f"{name}.yaml")])
    planner = P.Planner()
    engines = [planner.plan(s, {"block-size": size}) for s in fleet.engines]
    return [i.to_json() for i in P.issues(engines, fleet.routers, planner)]


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("nixl-28661-block-128", "KV703"),
        ("nixl-41037-tp-pair", "KV703"),
        ("nixl-41037-tp-pair", "KV709"),
        ("nixl-tp-split", "KV704"),
        ("nixl-host-buffer", "KV705"),
        ("mooncake-bp-lt-bd", "KV710"),
    ],
)
def test_block_size_fixes_clear_the_finding(name: str, code: str) -> None:
    assert code not in {f["code"] for f in _apply_fix(name, code)}


def test_the_41037_pair_gets_the_aligned_block_sizes() -> None:
    doc = doc_of("nixl-41037-tp-pair")
    sizes = {e["name"]: e["plan"]["groups"][-1]["block_size"] for e in doc["engines"]}
    assert sizes == {"prefill-dp8": 576, "decode-tp8": 320}
    assert doc["engines"][0]["replicas"] == 8


def test_the_28661_pair_shows_each_side_agreeing_with_itself() -> None:
    doc = doc_of("nixl-28661-block-128")
    for e in doc["engines"]:
        (g,) = e["components"]
        assert g["runner"] == g["connectors"]["NixlConnector"]
    pages = {e["name"]: e["components"][0]["runner"] for e in doc["engines"]}
    assert pages == {"prefill-b200": 128, "decode-h100": 64}


def test_mooncake_writes_the_wrong_pages() -> None:
    (f,) = doc_of("mooncake-bp-lt-bd")["findings"]
    assert "P sends tokens 256-511 into D's kernel pages [0, 1, 2, 3]" in f["vllm"]
    assert "pages 0-7" in f["vllm"]


def test_two_generations_name_the_backends_and_a_common_one() -> None:
    (f,) = doc_of("two-gpu-generations")["findings"]
    assert "attn_backend_name 'FLASHINFER' vs 'FLASH_ATTN'" in f["message"]
    assert f["fixes"][0].startswith("--attention-backend FLASHINFER on both engines")


def test_router_fix_names_the_engines_block_size() -> None:
    (f,) = doc_of("dynamo-router-16")["findings"]
    assert f["fixes"][0] == (
        "set the Dynamo frontend's --kv-cache-block-size (DYN_KV_CACHE_BLOCK_SIZE) to 64"
    )
    assert f["values"] == {"router.block_size": 16, "worker.effective_block_size": 64}


def test_dynamo_without_a_block_size_takes_the_first_registration(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(
        yaml.safe_dump(
            {
                "kvconfig_fleet": 1,
                "platform": "h100",
                "engines": [
                    {"name": "a", "command": f"vllm serve {FLEETS.parent}/models/qwen3-8b"},
                    {
                        "name": "b",
                        "command": f"vllm serve {FLEETS.parent}/models/qwen3-8b --block-size 64",
                    },
                ],
                "router": {"kind": "dynamo"},
            }
        )
    )
    doc = fleet_document([str(fleet)])
    assert [(f["code"], f["engines"]) for f in doc["findings"]] == [("KV711", ["b"])]
    assert "registered by a" in doc["findings"][0]["message"]


def test_stages_of_the_pipeline_example() -> None:
    (e,) = doc_of("pipeline-stages")["engines"]
    assert [s["kernel_block_sizes"] for s in e["stages"]] == [[128], [64]]


def test_text_report_and_exit_codes() -> None:
    text, code = lint_fleet([str(FLEETS / "nixl-28661-block-128.yaml")])
    assert code == 1
    assert "error KV703 nixl-block-size-indivisible [decode-h100 / prefill-b200]" in text
    assert "  vLLM: raises AssertionError: Local block size 64 is not divisible" in text
    assert text.rstrip().endswith("verdict: reject")
    text, code = lint_fleet([str(FLEETS / "correct-pd.yaml")], format="json")
    assert code == 0 and json.loads(text)["verdict"] == "ok"


def test_a_list_of_deployments_is_a_fleet(tmp_path: Path) -> None:
    model = FLEETS.parent / "models" / "qwen3-8b"

    def serve(name: str, block: int, role: str) -> str:
        path = tmp_path / f"{name}.yaml"
        path.write_text(
            yaml.safe_dump(
                {
                    "model": str(model),
                    "block-size": block,
                    "attention-backend": "FLASHINFER",
                    "kv-transfer-config": {"kv_connector": "NixlConnector", "kv_role": role},
                }
            )
        )
        return str(path)

    p = serve("p", 128, "kv_producer")
    d = serve("d", 128, "kv_consumer")
    doc = fleet_document([f"prefill:{p}", d], platform="h100")
    assert [(e["name"], e["role"]) for e in doc["engines"]] == [("p", "prefill"), ("d", "decode")]
    assert doc["findings"] == []
    doc = fleet_document(
        [p], command=["vllm", "serve", str(model), "--block-size", "128"], platform="b200"
    )
    assert [e["role"] for e in doc["engines"]] == ["prefill", "both"]


@pytest.mark.parametrize(
    ("body", "line", "error"),
    [
        ({"kvconfig_fleet": 1, "engines": []}, 2, "engines: needs at least one entry"),
        (
            {"kvconfig_fleet": 1, "engines": [{"name": "a", "command": "x", "rol": "prefill"}]},
            4,
            "engines[0].rol: unknown key (did you mean 'role'?)",
        ),
        (
            {"kvconfig_fleet": 1, "engines": [{"name": "a"}]},
            3,
            "give the engine either 'deployment' or 'command'",
        ),
        (
            {
                "kvconfig_fleet": 1,
                "engines": [{"name": "a", "command": "x"}],
                "router": {"kind": "dynamo", "engines": ["b"]},
            },
            None,
            "no engine is named 'b'",
        ),
    ],
    ids=["no-engines", "typo", "no-source", "unknown-engine"],
)
def test_bad_fleet_files(
    tmp_path: Path, body: dict[str, Any], line: int | None, error: str
) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    with pytest.raises(InputError) as info:
        fleet_document([str(path)])
    assert error in str(info.value)
    if line is not None:
        assert str(info.value).startswith(f"{path}:{line}:") or str(path) in str(info.value)


def test_a_fleet_that_contradicts_its_deployment(tmp_path: Path) -> None:
    model = FLEETS.parent / "models" / "qwen3-8b"
    path = tmp_path / "fleet.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "kvconfig_fleet": 1,
                "platform": "h100",
                "engines": [
                    {
                        "name": "a",
                        "command": f"vllm serve {model} --tensor-parallel-size 2",
                        "parallelism": {"tensor": 4},
                    }
                ],
            }
        )
    )
    with pytest.raises(InputError, match="the fleet sets --tensor-parallel-size 4"):
        fleet_document([str(path)])


def test_replicas_plan_once_and_pairs_group() -> None:
    fleet = fleet_read.read([str(FLEETS / "nixl-28661-block-128.yaml")])
    specs = list(fleet.engines) * 4
    planner = P.Planner()
    engines = [planner.plan(s) for s in specs]
    assert len({id(e) for e in engines}) == 2
    found = P.issues(engines, (), planner)
    assert [f.code for f in found] == ["KV703"]


# ---------------------------------------------------------------- digests and kvconfig diff


def test_digests_compare_what_decides_the_pages(tmp_path: Path) -> None:
    from kvconfig.fleet.diff import diff_files, differences, digest

    doc = doc_of("nixl-28661-block-128")
    b200, h100 = doc["engines"]
    assert digest(b200) != digest(h100)
    assert digest(b200["plan"]) == digest(dict(b200["plan"], source="elsewhere", findings=[]))
    assert differences(b200, h100) == [
        "group 0 kernel_block_size: 128 vs 64",
        "group 0 runner: 128 vs 64",
        "group 0 backends: FLASHINFER k=128 vs FLASHINFER k=64",
        "connector NixlConnector kernel_block_size: 128 vs 64",
        "connector NixlConnector pages_per_block: 1 vs 2",
    ]
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(b200["plan"]))
    b.write_text(json.dumps(h100["plan"]))
    text, code = diff_files(str(a), str(b))
    assert code == 1 and "group 0 kernel_block_size: 128 vs 64" in text
    text, code = diff_files(str(a), str(a))
    assert code == 0 and "same plan" in text
    fleet = tmp_path / "fleet.json"
    fleet.write_text(json.dumps(doc))
    text, code = diff_files(str(fleet), str(fleet))
    assert (code, text.count("same plan")) == (0, 2)


def test_diff_refuses_other_files(tmp_path: Path) -> None:
    from kvconfig.fleet.diff import diff_files

    bad = tmp_path / "bad.json"
    bad.write_text('{"hello": 1}')
    with pytest.raises(InputError, match="not a kvconfig plan"):
        diff_files(str(bad), str(bad))


def test_the_benchmark_fleet(tmp_path: Path) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("fleet_bench", ROOT / "bench" / "fleet.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    doc = fleet_document([str(bench.build(tmp_path))])
    assert len(doc["engines"]) == 64
    assert len({e["source"] for e in doc["engines"]}) == 8
    assert {f["code"] for f in doc["findings"]} >= {"KV703", "KV708", "KV709", "KV711"}


def test_operator_files_become_engines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The operator-file readers' engines (their documented fields) join the fleet."""
    import sys
    import types

    model = str(FLEETS.parent / "models" / "qwen3-8b")

    from kvconfig.load.operator_engine import Engine as OperatorEngine

    manifest = tmp_path / "pd.yaml"
    manifest.write_text("apiVersion: apps/v1\nkind: Deployment\n")
    kv = '{"kv_connector": "NixlConnector", "kv_role": "kv_producer"}'

    def engines_in(
        text: str,
        source: str,
        env: Mapping[str, str] | None = None,
        base: Path | None = None,
        path: Path | None = None,
    ) -> list[OperatorEngine]:
        return [
            OperatorEngine(
                "Deployment/p/vllm",
                source,
                7,
                (model, "--kv-transfer-config", kv, "--attention-backend", "FLASHINFER"),
                platforms=("B200",),
                role="prefill",
                parallelism={"replicas": 2},
                defaults={"block-size": 128},
            ),
            OperatorEngine(
                "Deployment/d/vllm",
                source,
                30,
                (
                    model,
                    "--block-size",
                    "128",
                    "--attention-backend",
                    "FLASHINFER",
                    "--kv-transfer-config",
                    kv.replace("producer", "consumer"),
                ),
                platforms=("H100",),
                role="decode",
            ),
        ]

    from kvconfig.load.engines import refusal

    monkeypatch.setitem(
        sys.modules,
        "kvconfig.load.engines",
        types.SimpleNamespace(
            engines_in=engines_in, read_file=lambda p, _s: p.read_text(), refusal=refusal
        ),
    )
    doc = fleet_document([str(manifest)])
    assert [(e["name"], e["role"], e["replicas"], e["platform"]) for e in doc["engines"]] == [
        ("Deployment/p/vllm", "prefill", 2, "B200"),
        ("Deployment/d/vllm", "decode", 1, "H100"),
    ]
    assert [f["code"] for f in doc["findings"]] == ["KV703"]


def test_a_release_kvconfig_assumes_is_hashed_as_named(tmp_path: Path) -> None:
    """vLLM's NIXL compatibility hash includes the engine's own ``vllm.__version__``
    (``nixl/metadata.py``): an engine naming a release kvconfig plans with another
    release's rules (KV502) keeps its own name in the hash, so a pair across releases
    fails the handshake (KV708) as vLLM's would, instead of reading ok."""
    model = ROOT / "examples" / "models" / "deepseek-v3"

    def engine(name: str, role: str, version: str) -> dict[str, Any]:
        return {
            "name": name,
            "role": role,
            "vllm_version": version,
            "command": f"vllm serve {model}",
            "kv_transfer_config": {
                "kv_connector": "NixlConnector",
                "kv_role": "kv_producer" if role == "prefill" else "kv_consumer",
            },
        }

    def lint(decode_version: str) -> tuple[str, int]:
        doc = {
            "kvconfig_fleet": 1,
            "name": "releases",
            "platform": "h200",
            "engines": [
                engine("prefill", "prefill", "0.33.0"),
                engine("decode", "decode", decode_version),
            ],
        }
        path = tmp_path / f"fleet-{decode_version}.yaml"
        path.write_text(yaml.safe_dump(doc))
        return lint_fleet([path])

    text, _ = lint("0.33.0")
    assert "KV708" not in text and "KV502" not in text, text
    text, code = lint("v0.34.0")
    assert "KV502" in text and "KV708" in text and "0.34.0" in text and code == 1, text


def test_vllm_version_and_cubins_reach_every_engine_over_its_own(tmp_path: Path) -> None:
    """``lint --fleet`` takes every option ``lint`` takes: ``--vllm-version`` is the
    release every engine plans for, above the one the engine names (its image tag, a
    fleet file's ``vllm_version``), as for ``kvconfig lint``; ``--no-trtllm-cubins``
    reaches each engine's deployment."""
    fleet = FLEETS / "correct-pd.yaml"
    doc = fleet_document([str(fleet)])
    assert {e["plan"]["vllm_version"] for e in doc["engines"]} == {"0.33.0"}
    doc = fleet_document([str(fleet)], vllm_version="0.32.0")
    assert doc["vllm_version"] == "0.32.0"
    assert {e["plan"]["vllm_version"] for e in doc["engines"]} == {"0.32.0"}
    fleet_in = fleet_read.read([str(fleet)])
    for cubins in (None, False):
        plans = P.Planner(fleet_in.vllm_version, trtllm_cubins=cubins)
        engines, _ = P.plan_engines(fleet_in, plans)
        assert engines and all(
            e.loaded.deployment.trtllm_cubins is (cubins is not False) for e in engines
        )
    with pytest.raises(InputError, match="is not a vLLM release"):
        fleet_document([str(fleet)], vllm_version="bogus")
    text, _ = lint_fleet([str(fleet)], vllm_version="v0.29.1")
    assert "KV502" in text and "0.29.1" in text, text
