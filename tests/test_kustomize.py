"""A kustomization read as ``kustomize build`` builds it (kvconfig.load.kubernetes.kustomize):
resources, strategic merge and JSON patches, images, replicas, and kustomize's default
load restrictor."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvconfig.errors import InputError
from kvconfig.load.engines import engines_in
from kvconfig.load.reading import reading_of
from kvconfig.load.roots import allowed_roots, reading_within

BASE = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: vllm}
spec:
  replicas: 1
  selector: {matchLabels: {app: v}}
  template:
    metadata: {labels: {app: v}}
    spec:
      containers:
      - name: server
        image: vllm/vllm-openai:v0.10.0
        command: ["vllm", "serve", "$(MODEL_ID)", "--tensor-parallel-size", "2"]
        env:
        - {name: MODEL_ID, value: google/gemma-7b}
        - {name: KEEP, value: "1"}
        resources: {limits: {nvidia.com/gpu: 2}}
      - name: sidecar
        image: busybox
        command: ["sleep", "infinity"]
---
apiVersion: v1
kind: Service
metadata: {name: vllm}
spec: {ports: [{port: 8000}]}
"""

KUSTOMIZATION = """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- {resource}
patches:
- path: patch.yaml
  target: {{kind: Deployment, name: vl.*}}
- target: {{kind: Deployment, name: vllm}}
  patch: |-
    - op: add
      path: /spec/template/spec/containers/0/command/-
      value: --block-size=32
replicas:
- {{name: vllm, count: 3}}
images:
- {{name: vllm/vllm-openai, newTag: v0.11.0}}
"""

PATCH = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: ignored-with-a-target}
spec:
  template:
    spec:
      containers:
      - name: server
        env:
        - {name: MODEL_ID, value: google/gemma-2b}
      - {name: sidecar, $patch: delete}
"""


def read(path: Path) -> list[dict[str, object]]:
    with reading_within(allowed_roots([str(path)])):
        engines = engines_in(path, path.name)
    return [reading_of(e).to_json() for e in engines]


@pytest.mark.parametrize("as_base", [False, True])
def test_a_kustomization_is_read_as_kustomize_builds_it(tmp_path: Path, as_base: bool) -> None:
    """The base (a file beside it, or a folder with its own kustomization), the patch by
    target (env merged by name, a container deleted), the JSON patch, replicas, images."""
    (tmp_path / ".git").mkdir()
    if as_base:
        (tmp_path / "base").mkdir()
        (tmp_path / "base" / "deploy.yaml").write_text(BASE)
        (tmp_path / "base" / "kustomization.yaml").write_text(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
            "resources: [deploy.yaml]\n"
        )
    over = tmp_path / "over"
    over.mkdir()
    if not as_base:
        (over / "deploy.yaml").write_text(BASE)
    (over / "patch.yaml").write_text(PATCH)
    k = over / "kustomization.yaml"
    k.write_text(KUSTOMIZATION.format(resource="../base" if as_base else "deploy.yaml"))
    [engine] = read(k)
    assert engine["model"] == "google/gemma-2b"
    assert (engine["tensor"], engine["block_size"], engine["replicas"]) == (2, 32, 3)
    assert engine["vllm_version"] == "0.11.0"


def test_kustomize_refuses_a_resource_file_outside_its_folder(tmp_path: Path) -> None:
    """kustomize's default LoadRestrictionsRootOnly: ../deploy.yaml as a file is refused
    (a folder outside is a base and allowed, above)."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "deploy.yaml").write_text(BASE)
    (tmp_path / "over").mkdir()
    k = tmp_path / "over" / "kustomization.yaml"
    k.write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        "resources: [../deploy.yaml]\n"
    )
    with pytest.raises(InputError, match="not in or below the kustomization's folder"):
        read(k)


@pytest.mark.parametrize(
    ("extra", "message"),
    [("components: [../c]", "'components'"), ("resources: [https://x/y]", "can read here")],
)
def test_what_is_not_built_says_to_build_it_first(tmp_path: Path, extra: str, message: str) -> None:
    (tmp_path / ".git").mkdir()
    k = tmp_path / "kustomization.yaml"
    k.write_text(f"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n{extra}\n")
    with pytest.raises(InputError, match=message) as err:
        read(k)
    assert "kubectl kustomize" in (err.value.hint or "")
