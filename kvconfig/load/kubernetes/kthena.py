"""Volcano Kthena's ``ModelServing`` (``workload.serving.volcano.sh``): what its controller
gives a role's entry and worker pods, and the data-parallel ranks they run."""

from __future__ import annotations

from typing import Any

from kvconfig.load.kubernetes.resources import Resource
from kvconfig.load.operator_engine import Engine


def ranks_of_one_group(res: Resource, engines: list[Engine]) -> list[Engine]:
    """A Kthena role whose entry and worker pods run the same server but for its
    ``--data-parallel-rank``: the ranks of one data-parallel engine, one pod each (read as
    a LeaderWorkerSet's one-pod-per-rank group is), so the entry's engine stands for it."""
    if res.data.get("kind") != "ModelServing" or len(engines) < 2:
        return engines

    def key(e: Engine) -> tuple[str, ...] | None:
        """The engine's role and words with its rank blanked; None without a rank."""
        words, ranked = list(e.argv), False
        for i, w in enumerate(words):
            if w == "--data-parallel-rank" and i + 1 < len(words):
                words[i + 1], ranked = "RANK", True
            elif w.startswith("--data-parallel-rank="):
                words[i], ranked = "--data-parallel-rank=RANK", True
        parts = e.name.split("/")
        role = parts[2].split(".")[:2] if len(parts) > 2 else []
        return (*role, e.entry, *words) if ranked else None

    out: list[Engine] = []
    seen: set[tuple[str, ...]] = set()
    for e in engines:
        k = key(e)
        if k is not None and k in seen:
            continue  # another rank of an engine already read
        if k is not None:
            seen.add(k)
        out.append(e)
    return out


def role_of(res: Resource, path: tuple[str | int, ...]) -> dict[str, Any] | None:
    """The ``ModelServing`` role whose entry or worker pod template is at ``path``."""
    data = res.data
    if data.get("kind") != "ModelServing" or not str(data.get("apiVersion", "")).startswith(
        "workload.serving.volcano.sh/"
    ):
        return None
    if len(path) < 3 or path[-2] not in ("entryTemplate", "workerTemplate"):
        return None
    node: Any = data
    for p in path[:-2]:
        node = node[p]
    return node if isinstance(node, dict) else None


def pd_role(res: Resource, path: tuple[str | int, ...]) -> str | None:
    """The P/D side a ``ModelServing`` role's name gives: the model-booster controller
    names a disaggregated backend's roles ``prefill`` and ``decode``
    (``templates/vllm-pd.yaml``), and its ``ModelServer`` pairs them by those names
    (``pdGroup``; the router's ``getPdGroup`` sends each request to a prefill pod, then a
    decode pod); None for any other name or resource."""
    role = role_of(res, path)
    name = role.get("name") if role is not None else None
    return name if name in ("prefill", "decode") else None


def role_copies(res: Resource, path: tuple[str | int, ...]) -> int | None:
    """How many copies of the role each serving group runs (its ``replicas``, default 1:
    the CRD's "the number of a certain role"; the controller creates ``replicas`` entry
    pods, each with its workers, in every group of ``spec.replicas``); None for any other
    resource or a count that is not a number."""
    role = role_of(res, path)
    if role is None:
        return None
    copies = role.get("replicas", 1)
    return copies if isinstance(copies, int) and not isinstance(copies, bool) else None


def kthena_env(res: Resource, path: tuple[str | int, ...]) -> tuple[dict[str, str], list[str]]:
    """The variables Kthena's ``ModelServing`` controller adds to every container of a
    role's entry and worker pods (volcano-sh/kthena ``pkg/model-serving-controller/utils``:
    ``createCommonEnvVars``, ``addPodEnvVars``): ``GROUP_SIZE`` (``workerReplicas`` + 1),
    ``ENTRY_ADDRESS`` (the entry pod's address, known at run time) and ``WORKER_INDEX``
    (0 on the entry pod, the worker's index otherwise); none for any other resource."""
    node = role_of(res, path)
    if node is None:
        return {}, []
    workers = node.get("workerReplicas", 0)
    known = {"GROUP_SIZE": str(workers + 1)} if isinstance(workers, int) else {}
    unknown = ["ENTRY_ADDRESS"] + ([] if known else ["GROUP_SIZE"])
    if path[-2] == "entryTemplate":
        known["WORKER_INDEX"] = "0"
    else:
        unknown.append("WORKER_INDEX")
    return known, unknown
