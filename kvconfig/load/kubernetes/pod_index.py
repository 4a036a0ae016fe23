"""A container read once per pod index, for a script that branches on it.

Two controllers give each pod of one template an index its containers can read:

* LeaderWorkerSet gives every pod of a group ``LWS_WORKER_INDEX``: 0 on the leader, 1 ..
  ``size``-1 on the workers, from the pod's ``leaderworkerset.sigs.k8s.io/worker-index``
  label (kubernetes-sigs/lws ``pkg/utils/pod/pod_utils.go`` ``AddLWSVariables``, which its
  pod webhook calls; the constant in ``api/leaderworkerset/v1/leaderworkerset_types.go``;
  ``test/testutils`` ``HasLWSEnvVarsPopulated`` checks it on every pod). A script can
  branch on it, so that worker 1 starts a decode engine and worker 2 a prefill one
  (LMCache's ``examples/disagg_prefill/1p1d/k8s/1p1d-lws.yaml``).
* A StatefulSet names its pods ``NAME-0`` .. ``NAME-(replicas-1)`` and sets each pod's
  hostname to its name (Kubernetes ``pkg/controller/statefulset/stateful_set_utils.go``:
  ``getPodName``, ``updateIdentity``), which the kubelet gives every container as
  ``HOSTNAME``. A script takes the ordinal from it (``${HOSTNAME##*-}``), so that pod 0
  serves and pod 1 joins it as a headless node (``--node-rank``, ``--headless``).

Each index is a known value in its own pod: the container is read once per index, and
pods whose readings differ are different engines, each with the pods of its indices.
Pods that read the same (the usual case: a multi-node engine's workers, whose only
differences are ranks) stay one reading as before; the index is taken as known there
only when it settles a value every pod shares.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from kvconfig.load.kubernetes.containers import read_container
from kvconfig.load.kubernetes.resources import Found, Pod
from kvconfig.load.operator_engine import Engine

_INDEX = "LWS_WORKER_INDEX"

#: More pods than this are read as one reading (the index left to run time).
MAX_INDICES = 64


def worker_engines(
    pod: Pod,
    index: int,
    base: Path,
    found: list[Found],
    *,
    size: Any,
    env_base: Mapping[str, str],
    env_unknown: Sequence[str],
    implicit_entry: bool = False,
) -> list[Engine]:
    """The engines container ``index`` of a LeaderWorkerSet's worker template starts, over
    its workers (``implicit_entry``: as ``read_container``); each group of workers that
    read alike has ``replicas`` groups times their count, on one node each."""
    if _INDEX not in env_unknown or not isinstance(size, int):
        size = 0
    values = {str(w): str(w) for w in range(1, size)}
    return _per_index(pod, index, base, found, _INDEX, values, env_base, env_unknown,
                      implicit_entry, lws=True)  # fmt: skip


def ordinal_engines(  # noqa: PLR0917 (one container of one resource)
    pod: Pod,
    index: int,
    base: Path,
    found: list[Found],
    resource: str,
    replicas: Any,
    env_base: Mapping[str, str],
    env_unknown: Sequence[str],
) -> list[Engine]:
    """The engines container ``index`` of the StatefulSet ``resource`` (``KIND/NAME``)
    starts, over its pods; each group of pods that read alike has their count as its
    replicas."""
    name = resource.partition("/")[2]
    containers = pod.spec.get("containers")
    said = json.dumps(containers[index] if isinstance(containers, list) else None)
    count = replicas if isinstance(replicas, int) and "HOSTNAME" in said else 0
    values = {str(i): f"{name}-{i}" for i in range(count)}
    return _per_index(pod, index, base, found, "HOSTNAME", values, env_base, env_unknown,
                      False, lws=False)  # fmt: skip


def _per_index(  # noqa: PLR0917 (one container, its index variable and its values)
    pod: Pod,
    index: int,
    base: Path,
    found: list[Found],
    variable: str,
    values: Mapping[str, str],
    env_base: Mapping[str, str],
    env_unknown: Sequence[str],
    implicit_entry: bool,
    *,
    lws: bool,
) -> list[Engine]:
    label = "llm-d" if implicit_entry else None
    first = read_container(
        pod, index, base, found, env_base=env_base, env_unknown=env_unknown,
        implicit_entry=implicit_entry, entry_label=label,
    )  # fmt: skip
    if not first or not 1 <= len(values) <= MAX_INDICES:
        return first
    unknown = [v for v in env_unknown if v != variable]
    by_key: dict[tuple[Any, ...], list[str]] = {}
    read: dict[str, list[Engine]] = {}
    for shown, value in values.items():
        engines = read_container(
            pod, index, base, [], env_base={**env_base, variable: value}, env_unknown=unknown,
            implicit_entry=implicit_entry, entry_label=label,
        )  # fmt: skip
        read[shown] = engines
        by_key.setdefault(tuple(_key(e) for e in engines), []).append(shown)
    if len(by_key) == 1:
        # every pod reads the same: one reading, the index known where it settles more
        same = tuple(_key(e) for e in first) in by_key
        return first if same else read[next(iter(values))]
    out: list[Engine] = []
    for indices in by_key.values():
        for engine in read[indices[0]]:
            shown = ",".join(indices)
            parallelism = {**engine.parallelism, "replicas": len(indices)}
            if lws:  # each worker index is one pod of each of the groups
                groups = engine.parallelism.get("replicas", 1)
                parallelism |= {"replicas": groups * len(indices), "nodes": 1}
            out.append(replace(engine, name=f"{engine.name}[{shown}]", parallelism=parallelism))
    return out


def _key(engine: Engine) -> tuple[Any, ...]:
    """What a pod's engine is told that matters to its plan (its reading but the name),
    and whether it serves (``--headless``: a node of an engine another pod serves)."""
    from kvconfig.load.reading import reading_of

    r = reading_of(engine).to_json()
    headless = "--headless" in engine.argv
    return (headless, *(str(v) for k, v in sorted(r.items()) if k != "name"))
