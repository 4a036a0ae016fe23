"""A kustomization's ``configMapGenerator`` and ``replacements`` built as kustomize builds
them (kvconfig.load.kubernetes.kustomize_fields), against ``kubectl kustomize``'s own output.

Each case under ``tests/kustomize/`` holds a kustomization and what ``kubectl kustomize``
(kustomize v5.5.0) printed for it, recorded: ``expected.yaml`` (the resources; a generated
ConfigMap's name keeps no content hash in kvconfig, so the case turns the hash off) or
``expected.err`` (the error). Where ``kubectl`` is installed the recording is checked
against a live run too.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from kvconfig.errors import InputError
from kvconfig.load.engines import engines_in
from kvconfig.load.kubernetes.kustomize import build
from kvconfig.load.reading import reading_of
from kvconfig.load.roots import allowed_roots, reading_within

CASES = Path(__file__).parent / "kustomize"


def _sorted(docs: list[Any]) -> list[str]:
    return sorted(json.dumps(d, sort_keys=True) for d in docs if d)


def _built(folder: Path) -> list[str]:
    k = folder / "kustomization.yaml"
    with reading_within(allowed_roots([str(k)])):
        docs = build(yaml.safe_load(k.read_text()), folder, str(k))
    return _sorted([d.data for d in docs])


def test_replacements_and_generated_config_maps_build_as_kustomize_builds_them() -> None:
    """Replacements from a generated ConfigMap (an env file with a comment and a quoted
    value, quoted literals): a list element by ``[name=...]``, an index, a delimiter, a
    wildcard, ``create``, a label selector, a ``reject`` by the name before ``namePrefix``,
    and more replacements from a ``path`` file."""
    case = CASES / "replacements"
    expected = _sorted(list(yaml.safe_load_all((case / "expected.yaml").read_text())))
    assert _built(case / "over") == expected
    k = case / "over" / "kustomization.yaml"
    with reading_within(allowed_roots([str(k)])):
        readings = {e.name: reading_of(e) for e in engines_in(k, k.name)}
    served = readings["Deployment/p-vllm/vllm"]
    assert (served.model, served.block_size, served.replicas) == ("Qwen/Qwen3-8B", 64, 3)
    assert readings["Deployment/p-other/vllm"].model == "keep/me"


@pytest.mark.parametrize("case", ["missing-target", "wildcard-mapping"])
def test_a_target_field_that_is_not_there_is_an_error(case: str) -> None:
    """A target path that finds nothing, without ``create``: a field the resource lacks,
    or ``*`` over a mapping (it matches a list's elements only)."""
    said = (CASES / case / "expected.err").read_text().strip()
    field = said.split('"')[1]
    with pytest.raises(InputError, match="unable to find field") as err:
        _built(CASES / case / "k")
    assert f"unable to find field {field!r} in replacement target" in str(err.value)


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="the recordings are checked above")
@pytest.mark.parametrize("case", ["replacements/over", "missing-target/k", "wildcard-mapping/k"])
def test_the_recordings_are_what_kubectl_kustomize_prints(case: str) -> None:
    command = ["kubectl", "kustomize", str(CASES / case)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    recorded = CASES / case.split("/", maxsplit=1)[0]
    if (recorded / "expected.yaml").exists():
        assert done.returncode == 0, done.stderr
        assert _sorted(list(yaml.safe_load_all(done.stdout))) == _sorted(
            list(yaml.safe_load_all((recorded / "expected.yaml").read_text()))
        )
    else:
        assert done.returncode != 0
        said = (recorded / "expected.err").read_text().strip()
        assert said in done.stderr.replace('\\"', '"')  # klog quotes the error's quotes


_MALFORMED = [5, "x", True, [5], ["a"], [None], {"a": 1}]
_FIELDS = [
    "resources", "bases", "patches", "patchesStrategicMerge", "patchesJson6902", "images",
    "replicas", "configMapGenerator", "replacements",
]  # fmt: skip


@pytest.mark.parametrize("field", _FIELDS)
def test_a_malformed_field_is_a_one_line_input_error(field: str, tmp_path: Path) -> None:
    """Each field of the wrong type (a number, a string, a list of the wrong items) is bad
    input with kvconfig's one-line error, never an internal error."""
    (tmp_path / "deploy.yaml").write_text(
        (CASES / "missing-target" / "k" / "deploy.yaml").read_text()
    )
    k = tmp_path / "kustomization.yaml"
    head = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
    for value in _MALFORMED:
        body = {"resources": ["deploy.yaml"], field: value}
        k.write_text(head + yaml.safe_dump(body))
        try:
            with reading_within(allowed_roots([str(k)])):
                build(yaml.safe_load(k.read_text()), tmp_path, str(k))
        except InputError as err:
            assert "\n" not in str(err)


@pytest.mark.parametrize(
    "target",
    [
        {"select": 5},
        {"select": {"kind": "Deployment"}, "fieldPaths": "x"},
        {"select": {"kind": "Deployment"}, "options": ["a"]},
        {"select": {"kind": "Deployment"}, "options": {"delimiter": 1, "index": "x"}},
        {"select": {"kind": "Deployment"}, "reject": 5},
        {"select": {"kind": "Deployment", "labelSelector": "a in (b)"}},
    ],
)
def test_a_malformed_replacement_target_is_an_input_error(target: Any, tmp_path: Path) -> None:
    (tmp_path / "deploy.yaml").write_text(
        (CASES / "missing-target" / "k" / "deploy.yaml").read_text()
    )
    k = tmp_path / "kustomization.yaml"
    body = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": ["deploy.yaml"],
        "replacements": [{"source": {"kind": "Deployment", "name": "vllm"}, "targets": [target]}],
    }
    k.write_text(yaml.safe_dump(body))
    with pytest.raises(InputError), reading_within(allowed_roots([str(k)])):
        build(yaml.safe_load(k.read_text()), tmp_path, str(k))
