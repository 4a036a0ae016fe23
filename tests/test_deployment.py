"""One model of a deployment, validated in one place, read the same by the CLI and the API.

* ``schemas.deployment.Deployment`` is what every loader produces and the resolver reads;
  the CLI and ``kvconfig.load_deployment`` go through the same loader, so a file one
  accepts the other accepts, with the same plan.
* The names whose valid values depend on the vLLM release (speculative methods,
  ``backend_per_kind`` keys, KV-cache dtypes) come from that release's facts.
* No pydantic error leaves the API: bad documents are ``kvconfig.InputError`` lines.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import kvconfig
from kvconfig.cli import main
from kvconfig.errors import DeploymentError
from kvconfig.load import validate
from kvconfig.mirror import versions
from kvconfig.schemas.deployment import Deployment, LayerSet

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
FACTS = versions.facts(versions.DEFAULT)

SERVE = {
    "ngram-gpu": (
        "model: ./models/qwen3-8b\n"
        "speculative-config:\n  method: ngram_gpu\n  num_speculative_tokens: 3\n"
    ),
    "sink-full-attention": (
        "model: ./models/qwen3-8b\n"
        "attention-config:\n  backend_per_kind:\n    sink_full_attention: FLASH_ATTN\n"
    ),
}


def _serve(tmp_path: Path, name: str) -> Path:
    (tmp_path / "models").symlink_to(EXAMPLES / "models")
    path = tmp_path / f"{name}.yaml"
    path.write_text(SERVE[name], encoding="utf-8")
    return path


def _cli_plan(path: Path, platform: str) -> dict[str, Any]:
    out = io.StringIO()
    code = main(["plan", "--platform", platform, "--format", "json", str(path)], stdout=out)
    assert code in (0, 1)
    doc: dict[str, Any] = json.loads(out.getvalue())
    return doc


@pytest.mark.parametrize("name", sorted(SERVE))
def test_the_api_accepts_what_the_cli_accepts(tmp_path: Path, name: str) -> None:
    path = _serve(tmp_path, name)
    dep = kvconfig.load_deployment(path, platform="h200")
    assert isinstance(dep, Deployment)
    api = kvconfig.resolve(dep).model_dump(mode="json", by_alias=True)
    assert api == _cli_plan(path, "h200")


def test_ngram_gpu_is_a_method_without_draft_layers(tmp_path: Path) -> None:
    dep = kvconfig.load_deployment(_serve(tmp_path, "ngram-gpu"), platform="h200")
    assert dep.speculative_method == "ngram_gpu"
    assert {layer.role for layer in dep.layers} == {"target"}


def test_sink_full_attention_is_a_backend_per_kind_key(tmp_path: Path) -> None:
    dep = kvconfig.load_deployment(_serve(tmp_path, "sink-full-attention"), platform="h200")
    assert dep.attention.backend_per_kind == {"sink_full_attention": "FLASH_ATTN"}


#: Every deployment example: not the models, the fleets or the operator files (several
#: engines each; tests/test_fleet_examples.py and tests/test_inputs_golden.py read those)
EVERY_EXAMPLE = sorted(
    p
    for p in EXAMPLES.rglob("*.yaml")
    if not {"models", "fleets", "operators"} & set(p.relative_to(EXAMPLES).parts)
)


@pytest.mark.parametrize("path", EVERY_EXAMPLE, ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_cli_and_api_plan_every_example_alike(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    rel = path.relative_to(ROOT)
    for platform in ("h200", "b200"):
        api = kvconfig.resolve(kvconfig.load_deployment(rel), platform=platform)
        assert api.model_dump(mode="json", by_alias=True) == _cli_plan(rel, platform)


@pytest.mark.parametrize("method", FACTS.speculative_methods)
def test_every_method_of_the_release_is_a_deployment_method(method: str) -> None:
    draft = [] if method in ("ngram", "ngram_gpu", "suffix") else [LayerSet(name="d", role="draft")]
    dep = Deployment(speculative_method=method, layers=[LayerSet(), *draft])
    assert dep.speculative_method == method


@pytest.mark.parametrize("kind", FACTS.spec_kinds)
def test_every_spec_kind_of_the_release_is_a_backend_per_kind_key(kind: str) -> None:
    doc = {"attention": {"backend_per_kind": {kind: "FLASH_ATTN"}}, "layers": [{}]}
    assert validate.deployment(doc).attention.backend_per_kind == {kind: "FLASH_ATTN"}


@pytest.mark.parametrize(
    ("fields", "loc"),
    [
        ({"speculative_method": "medusa"}, ("speculative_method",)),
        ({"kv_cache_dtype": "fp9"}, ("kv_cache_dtype",)),
        ({"vllm_version": "0.99.0"}, ("vllm_version",)),
    ],
)
def test_names_the_release_does_not_know_are_refused(
    fields: dict[str, Any], loc: tuple[str, ...]
) -> None:
    with pytest.raises(DeploymentError) as info:
        Deployment(layers=[LayerSet()], **fields)
    assert info.value.loc == loc


BAD_DOCUMENTS = [
    {"layers": [{"count": "two"}]},
    {"layers": []},
    {"layers": [{"kind": "full"}]},
    {"layers": [{"count": 1}], "speculative_method": "eagle3"},
    {"layers": [{"count": 1}], "attention": {"backend_per_kind": {"full": "FLASH_ATTN"}}},
    {"layers": [{"count": 1}], "backends": {"X": {"sizes": []}}},
    {"layers": [{"count": 1}], "unknown": 1},
    {"layers": "everything"},
]


@pytest.mark.parametrize("doc", BAD_DOCUMENTS, ids=lambda d: json.dumps(d)[:40])
def test_no_pydantic_error_leaves_the_validation(doc: dict[str, Any]) -> None:
    with pytest.raises(kvconfig.InputError) as info:
        validate.deployment({"source": "doc.yaml", **doc})
    assert type(info.value) is kvconfig.InputError
    assert info.value.source == "doc.yaml" and info.value.key


def test_no_pydantic_error_leaves_load_deployment(tmp_path: Path) -> None:
    path = tmp_path / "native.yaml"
    path.write_text("kvconfig: 1\nplatform: h200\nlayers:\n  - count: two\n", encoding="utf-8")
    with pytest.raises(kvconfig.InputError, match=r"layers\[0\]\.count: expected an integer"):
        kvconfig.load_deployment(path)


def test_the_resolver_reads_the_deployment_and_nothing_else() -> None:
    import importlib.util
    import inspect

    from kvconfig.plan.resolve import resolve

    assert importlib.util.find_spec("kvconfig.plan.setup") is None
    assert inspect.signature(resolve).parameters["dep"].annotation == "Deployment"


def test_the_model_imports_without_pydantic() -> None:
    code = "import sys, schemas.deployment, schemas.sizes; print('pydantic' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False"


def test_a_custom_backend_says_what_it_serves() -> None:
    doc = {"source": "doc.yaml", "layers": [{"backend": "X"}]}
    dep = validate.deployment({**doc, "backends": {"X": {"sizes": [16], "serves": "mla"}}})
    assert dep.backends["X"].serves == "mla"
    with pytest.raises(kvconfig.InputError) as info:
        validate.deployment({**doc, "backends": {"X": {"sizes": [16], "kind": "mla"}}})
    assert (info.value.key, info.value.hint) == ("backends.X.kind", "renamed 'serves'")
