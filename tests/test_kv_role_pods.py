"""A Kubernetes pod that no label or operator role names is the P/D side its own
``--kv-transfer-config`` says (vLLM's ``KVTransferConfig.is_kv_producer`` /
``is_kv_consumer``), as a launch script's server is; and a kv-transfer value the shell
cannot decide is a run-time value (KV403), not a value vLLM refuses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kvconfig.load.engines import engines_in
from kvconfig.load.reading import reading_of

POD = """
apiVersion: apps/v1
kind: Deployment
metadata: {{name: d}}
spec:
  replicas: 2
  template:
    metadata:
      labels: {labels}
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:latest
        args:
        - Qwen/Qwen3-8B
        - --kv-transfer-config
        - '{{"kv_connector":"NixlConnector","kv_role":"{role}"}}'
"""


@pytest.mark.parametrize(
    ("kv_role", "labels", "want"),
    [
        ("kv_producer", "{}", "prefill"),
        ("kv_consumer", "{}", "decode"),
        ("kv_both", "{}", None),
        # a role label (llm-d's) says more than the connector: it stays
        ("kv_both", "{llm-d.ai/role: decode}", "decode"),
        ("kv_producer", "{llm-d.ai/role: decode}", "decode"),
    ],
)
def test_role_from_kv_role(kv_role: str, labels: str, want: str | None, tmp_path: Path) -> None:
    f = tmp_path / "d.yaml"
    f.write_text(POD.format(labels=labels, role=kv_role))
    (engine,) = engines_in(f, "d.yaml")
    assert engine.role == want
    assert reading_of(engine).kv_role == kv_role


SCRIPT = """
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {{name: d}}
spec:
  replicas: 2
  leaderWorkerTemplate:
    size: {size}
    workerTemplate:
      spec:
        containers:
        - name: vllm
          image: vllm/vllm-openai:latest
          command: [/bin/bash, -c]
          args:
          - |
            if [ ${var} -eq 1 ]; then
              kv="{{\\"kv_connector\\":\\"NixlConnector\\",\\"kv_role\\":\\"kv_consumer\\"}}"
            else
              kv="{{\\"kv_connector\\":\\"NixlConnector\\",\\"kv_role\\":\\"kv_producer\\"}}"
            fi
            vllm serve Qwen/Qwen3-8B --kv-transfer-config "$kv"
          env:
          - name: SIDE
            valueFrom: {{fieldRef: {{fieldPath: metadata.name}}}}
"""


def _read(text: str, tmp_path: Path) -> list[tuple[str, str | None, Any, Any]]:
    f = tmp_path / "d.yaml"
    f.write_text(text)
    out = []
    for engine in engines_in(f, "d.yaml"):
        r = reading_of(engine)
        assert r.unreadable is None
        out.append((engine.name.rsplit("/", 1)[1], engine.role, r.replicas, r.run_time))
    return out


def test_undecided_variable_is_run_time(tmp_path: Path) -> None:
    """SIDE comes from the pod at run time: the shell cannot pick a branch, so $kv is
    unknown; the reading is readable with the option left to run time, not refused."""
    got = _read(SCRIPT.format(size=3, var="SIDE"), tmp_path)
    assert got == [("vllm", None, 2, {"kv-transfer-config": "$kv"})]


def test_lws_worker_index_splits_workers(tmp_path: Path) -> None:
    """LeaderWorkerSet gives each worker its own LWS_WORKER_INDEX: worker 1 decodes,
    workers 2 and 3 prefill, in each of the 2 groups."""
    got = _read(SCRIPT.format(size=4, var="LWS_WORKER_INDEX"), tmp_path)
    assert sorted(got) == [("vllm[1]", "decode", 2, {}), ("vllm[2,3]", "prefill", 4, {})]


def test_lws_single_worker_index_is_known(tmp_path: Path) -> None:
    """A group of 2 has one worker, index 1: its script's branch is known."""
    got = _read(SCRIPT.format(size=2, var="LWS_WORKER_INDEX"), tmp_path)
    assert got == [("vllm", "decode", 2, {})]


STATEFUL = """
apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: mx}}
spec:
  replicas: {replicas}
  serviceName: mx
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:latest
        command: [/bin/bash, -c]
        args:
        - |
          ORDINAL=${{HOSTNAME##*-}}
          {body}
"""


def test_statefulset_ordinal_joins_a_multi_node_engine(tmp_path: Path) -> None:
    """A StatefulSet's pod N has hostname NAME-N: pod 0 serves, pod 1 is a headless node
    of the same engine (--nnodes 2), so the two pods are one engine, not two."""
    body = (
        'H=""; if [ "$ORDINAL" != 0 ]; then H=--headless; fi\n'
        "          vllm serve Qwen/Qwen3-8B --nnodes 2 --node-rank $ORDINAL "
        "--master-addr ${HOSTNAME%-*}-0.mx $H"
    )
    got = _read(STATEFUL.format(replicas=2, body=body), tmp_path)
    assert got == [("vllm[0]", None, 1, {})]


def test_statefulset_ordinal_splits_prefill_and_decode(tmp_path: Path) -> None:
    """Pod 0 decodes, pods 1 and 2 prefill: two engines, with the pods of their ordinals."""
    body = (
        'if [ "$ORDINAL" = 0 ]; then R=kv_consumer; else R=kv_producer; fi\n'
        """          vllm serve Qwen/Qwen3-8B --kv-transfer-config """
        """"{\\"kv_connector\\":\\"NixlConnector\\",\\"kv_role\\":\\"$R\\"}\""""
    )
    got = _read(STATEFUL.format(replicas=3, body=body), tmp_path)
    assert sorted(got) == [("vllm[0]", "decode", 1, {}), ("vllm[1,2]", "prefill", 2, {})]


def test_statefulset_pods_that_read_alike_stay_one_engine(tmp_path: Path) -> None:
    """The ordinal in a port or an id only: every pod reads the same, one reading with
    the StatefulSet's replicas."""
    body = "vllm serve Qwen/Qwen3-8B --served-model-name m-$ORDINAL"
    got = _read(STATEFUL.format(replicas=3, body=body), tmp_path)
    assert got == [("vllm", None, 3, {})]
