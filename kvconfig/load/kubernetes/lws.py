"""A LeaderWorkerSet worker container read once per worker index.

LeaderWorkerSet gives every pod of a group its index (``LWS_WORKER_INDEX``: 0 on the
leader, 1 .. ``size``-1 on the workers, from the pod's
``leaderworkerset.sigs.k8s.io/worker-index`` label; kubernetes-sigs/lws
``pkg/utils/pod/pod_utils.go`` ``AddLWSVariables``, which its pod webhook calls, and the
constant in ``api/leaderworkerset/v1/leaderworkerset_types.go``; ``test/testutils``
``HasLWSEnvVarsPopulated`` checks all three variables on every pod). The worker template
is one, but a script in it can branch on that index, so that worker 1 starts a decode
engine and worker 2 a prefill one (LMCache's
``examples/disagg_prefill/1p1d/k8s/1p1d-lws.yaml``). Each index is a known value in its
own pod: the container is read once per index, and workers whose readings differ are
different engines, each with the pods of its indices (``replicas`` groups times their
count) and one node of its own. Workers that read the same (the usual case: a multi-node
engine's workers, whose only differences are ranks) stay one reading as before; the index
is taken as known there only when it settles a value every worker shares.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from kvconfig.load.kubernetes.containers import read_container
from kvconfig.load.kubernetes.resources import Found, Pod
from kvconfig.load.operator_engine import Engine

_INDEX = "LWS_WORKER_INDEX"

#: More workers than this are read as one reading (the index left to run time).
MAX_WORKERS = 64


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
    """The engines container ``index`` of a worker pod template starts, over its workers
    (``implicit_entry``: as ``read_container``)."""
    label = "llm-d" if implicit_entry else None
    first = read_container(
        pod, index, base, found, env_base=env_base, env_unknown=env_unknown,
        implicit_entry=implicit_entry, entry_label=label,
    )  # fmt: skip
    if not first or _INDEX not in env_unknown or not isinstance(size, int):
        return first
    if not 2 <= size <= MAX_WORKERS + 1:
        return first
    unknown = [v for v in env_unknown if v != _INDEX]
    by_key: dict[tuple[Any, ...], list[int]] = {}
    read: dict[int, list[Engine]] = {}
    for worker in range(1, size):
        env = {**env_base, _INDEX: str(worker)}
        engines = read_container(
            pod, index, base, [], env_base=env, env_unknown=unknown,
            implicit_entry=implicit_entry, entry_label=label,
        )  # fmt: skip
        read[worker] = engines
        by_key.setdefault(tuple(_key(e) for e in engines), []).append(worker)
    if len(by_key) == 1:
        # every worker reads the same: one reading, the index known where it settles more
        same = tuple(_key(e) for e in first) in by_key
        return first if same else read[1]
    out: list[Engine] = []
    for workers in by_key.values():
        for engine in read[workers[0]]:
            groups = engine.parallelism.get("replicas", 1)
            shown = ",".join(map(str, workers))
            parallelism = {**engine.parallelism, "replicas": groups * len(workers), "nodes": 1}
            out.append(replace(engine, name=f"{engine.name}[{shown}]", parallelism=parallelism))
    return out


def _key(engine: Engine) -> tuple[Any, ...]:
    """What a worker's engine is told that matters to its plan (its reading but the name)."""
    from kvconfig.load.reading import reading_of

    r = reading_of(engine).to_json()
    return tuple(str(v) for k, v in sorted(r.items()) if k != "name")
