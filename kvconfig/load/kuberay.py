"""KubeRay ``RayService``: the Ray Serve applications of ``spec.serveConfigV2``.

KubeRay starts the Ray cluster of ``spec.rayClusterConfig`` (head and worker pods that run
``ray start``, not vLLM) and hands ``spec.serveConfigV2``, a Serve config written as one
YAML string, to the cluster's Serve API: ``updateServeDeployment`` unmarshals it as YAML
and PUTs it as JSON to ``/api/serve/applications/``
(ray-project/kuberay ``ray-operator/controllers/ray/rayservice_controller.go``; the field
is ``RayServiceSpec.ServeConfigV2`` in ``ray-operator/apis/ray/v1/rayservice_types.go``).
The vLLM engines are therefore the ``LLMConfig`` entries of that config, read as any Ray
Serve config (``kvconfig.load.rayserve``). A RayService whose applications list no LLM
config (a custom ``import_path``) starts no engine kvconfig can read.

A Serve replica is a process the raylet of some node starts, so vLLM inherits the
environment of that node's Ray container (the first container of the group's pod template,
``RayContainerIndex`` in ``ray-operator/controllers/ray/utils/constant.go``), with the
config's ``runtime_env`` over it. Which group runs a replica is Ray's scheduling: the
groups whose Ray container asks for GPUs (all groups when none does), and a variable is
known only when all of them give it the same value.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvconfig.errors import InputError
from kvconfig.load import yamlfile as _yaml
from kvconfig.load.engine_fields import mapping

if TYPE_CHECKING:
    from kvconfig.load.kubernetes.resources import Found, Resource
    from kvconfig.load.operator_engine import Engine


def has_serve_config(res: Resource) -> bool:
    """Whether a ``RayService`` carries a ``serveConfigV2`` (else its pods are read)."""
    return isinstance(mapping(res.data.get("spec")).get("serveConfigV2"), str)


def engines(
    res: Resource, base: Path, found: list[Found], block_lines: frozenset[int]
) -> list[Engine]:
    """The engines of a ``RayService``'s ``spec.serveConfigV2``."""
    from kvconfig.load import rayserve
    from kvconfig.load.kubernetes.resources import Found

    name = str(mapping(res.data.get("metadata")).get("name") or "unnamed")
    text = str(res.data["spec"]["serveConfigV2"])
    line = res.line("spec", "serveConfigV2")
    # a literal block scalar keeps the file's lines (its line k is the file's line + k):
    # parsed below as many empty lines, the config's lines are the file's
    literal = line is not None and line in block_lines
    try:
        padded = "\n" * (line or 0) + text if literal else text
        parsed = _yaml.parse(padded, res.source) if text.strip() else None
    except InputError as err:
        raise InputError(
            err.message,
            source=res.source,
            line=err.line if literal else line,
            key="spec.serveConfigV2",
            hint=err.hint,
        ) from None
    if parsed is None or not isinstance(parsed.data, dict):
        raise InputError(
            "spec.serveConfigV2: expected a Ray Serve config (applications: [...]) as YAML text",
            source=res.source,
            line=line,
            key="spec.serveConfigV2",
            hint="write serveConfigV2: | followed by the Serve config",
        )
    lines = {p: (n if literal else line or 1) for p, n in parsed.lines.items()}
    doc = _yaml.Document(res.source, parsed.data, lines)
    try:
        read = rayserve.engines(doc, base)
    except InputError as err:
        if err.source != res.source:  # an LLMConfig file it names
            raise
        if not err.message.startswith(rayserve.NO_LLM_CONFIG):
            key = f"spec.serveConfigV2: {err.key}" if err.key else "spec.serveConfigV2"
            raise InputError(
                err.message, source=err.source, line=err.line, key=key, hint=err.hint
            ) from None
        apps = parsed.data.get("applications")
        paths = [
            str(a.get("import_path")) for a in apps if isinstance(a, dict) and a.get("import_path")
        ] if isinstance(apps, list) else []  # fmt: skip
        runs = (
            f"the Serve application {paths[0]}" if paths else "a Serve config without LLM configs"
        )
        found.append(Found(f"RayService/{name}", runs, line))
        return []
    known, unknown, sources = _cluster_env(res, name)
    out = []
    for e in read:
        own = set(e.env)
        out.append(
            replace(
                e,
                name=f"RayService/{name}/" + e.name.removeprefix("rayserve/"),
                env={**{k: v for k, v in known.items() if k not in own}, **e.env},
                env_unknown=tuple(n for n in unknown if n not in own),
                env_from=(*e.env_from, *sources),
            )
        )
    return out


def _cluster_env(res: Resource, name: str) -> tuple[dict[str, str], list[str], list[str]]:
    """(known, unknown, whole sources) of the environment the Ray containers that may run
    a replica share."""
    from kvconfig.load.engine_fields import listing
    from kvconfig.load.kubernetes.containers import gpu_count
    from kvconfig.load.kubernetes.env import container_env

    cluster = mapping(mapping(res.data.get("spec")).get("rayClusterConfig"))
    at: tuple[str | int, ...] = ("spec", "rayClusterConfig")
    groups: list[tuple[tuple[str | int, ...], dict[str, Any]]] = [
        ((*at, "headGroupSpec"), mapping(cluster.get("headGroupSpec")))
    ]
    for i, group in enumerate(listing(cluster.get("workerGroupSpecs"))):
        groups.append(((*at, "workerGroupSpecs", i), mapping(group)))
    rays = []
    for path, group in groups:
        containers = listing(mapping(mapping(group.get("template")).get("spec")).get("containers"))
        if containers and isinstance(containers[0], dict):
            rays.append(((*path, "template", "spec", "containers", 0), containers[0]))
    chosen = [r for r in rays if (gpu_count(r[1]) or 0) > 0] or rays
    envs = [container_env(c, res, p, f"RayService/{name}") for p, c in chosen]
    if not envs:
        return {}, [], []
    names = {n for e in envs for n in (*e.known, *e.unknown)}
    known = {
        n: envs[0].known[n]
        for n in sorted(names)
        if all(n in e.known and e.known[n] == envs[0].known[n] for e in envs)
    }
    unknown = sorted(names - known.keys())
    sources = sorted({s for e in envs for s in e.sources})
    return known, unknown, sources
