"""Launch scripts a pod mounts from a ConfigMap of the same input, read as the container's
shell runs them (kvconfig.load.kubernetes.volumes, the shell's ``held`` files)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvconfig.errors import NoEngine
from kvconfig.load.engines import engines_in
from kvconfig.load.operator_engine import Engine
from kvconfig.load.reading import reading_of

_MANIFEST = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: scripts
data:
  serve.sh: |
    BS=${{BS:-32}}
    exec vllm serve Qwen/Qwen3-8B --block-size $BS
  other.sh: |
    vllm serve Qwen/Qwen3-0.6B
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
  namespace: {namespace}
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.31.0
          command: ["/bin/bash", "-c"]
          args: ["{run}"]
          env: [{{name: BS, value: "64"}}]
          volumeMounts:
            - {{name: scripts, mountPath: {mount}{sub}}}
      volumes:
        - name: scripts
          configMap: {{name: scripts{mode}{items}}}
"""


def _engines(tmp_path: Path, **given: str) -> list[Engine]:
    fields = {"namespace": "default", "run": "cd /opt && ./serve.sh", "mount": "/opt",
              "sub": "", "mode": ", defaultMode: 0755", "items": ""} | given  # fmt: skip
    path = tmp_path / "deploy.yaml"
    path.write_text(_MANIFEST.format(**fields))
    return list(engines_in(path, str(path)))


def test_a_mounted_folder_s_script_run_by_its_path(tmp_path: Path) -> None:
    (engine,) = _engines(tmp_path)
    r = reading_of(engine).to_json()
    assert (r["model"], r["block_size"]) == ("Qwen/Qwen3-8B", 64)


def test_a_sub_path_and_items_place_one_key(tmp_path: Path) -> None:
    (engine,) = _engines(
        tmp_path, run="bash /opt/run.sh", mount="/opt/run.sh", sub=", subPath: run.sh",
        items=", items: [{key: other.sh, path: run.sh}]",
    )  # fmt: skip
    assert reading_of(engine).to_json()["model"] == "Qwen/Qwen3-0.6B"


def test_a_script_without_the_execute_bit_does_not_run(tmp_path: Path) -> None:
    """The kubelet writes the files 0644 unless ``defaultMode`` or ``mode`` says otherwise:
    ``./serve.sh`` is then refused by the shell (status 126)."""
    with pytest.raises(NoEngine):
        _engines(tmp_path, mode="")


def test_a_config_map_of_another_namespace_is_not_the_pod_s(tmp_path: Path) -> None:
    path = tmp_path / "deploy.yaml"
    text = _MANIFEST.format(namespace="serving", run="cd /opt && ./serve.sh", mount="/opt",
                            sub="", mode=", defaultMode: 0755", items="")  # fmt: skip
    path.write_text(
        text.replace("  name: scripts\ndata:", "  name: scripts\n  namespace: other\ndata:")
    )
    with pytest.raises(NoEngine):
        engines_in(path, str(path))


def test_a_native_sidecar_serves_beside_the_pod_s_containers(tmp_path: Path) -> None:
    """An init container with ``restartPolicy: Always`` runs for the pod's life (Kubernetes
    native sidecars); another init container ends before the containers start."""
    path = tmp_path / "job.yaml"
    path.write_text(
        """\
apiVersion: batch/v1
kind: Job
metadata: {name: batch}
spec:
  template:
    spec:
      initContainers:
        - {name: fetch, image: vllm/vllm-openai:v0.31.0, args: [Qwen/Qwen3-0.6B]}
        - name: server
          image: vllm/vllm-openai:v0.31.0
          restartPolicy: Always
          args: [Qwen/Qwen3-8B, --block-size, "32"]
      containers:
        - {name: client, image: python:3.12, command: [python, run.py]}
"""
    )
    (engine,) = engines_in(path, str(path))
    assert engine.name == "Job/batch/server"
    assert reading_of(engine).to_json()["model"] == "Qwen/Qwen3-8B"
