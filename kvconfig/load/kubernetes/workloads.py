"""Every pod template of a manifest's resources walked, and the engines of its containers."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kvconfig.errors import NoEngine
from kvconfig.load import llmaz
from kvconfig.load import yamlfile as _yaml
from kvconfig.load.engine_fields import LLM_D_SIMULATOR, listing
from kvconfig.load.kubernetes import model_booster
from kvconfig.load.kubernetes.containers import native_sidecars, read_container
from kvconfig.load.kubernetes.dualpod import has_routing_sidecar, server_pod
from kvconfig.load.kubernetes.kthena import kthena_env, pd_role, ranks_of_one_group, role_copies
from kvconfig.load.kubernetes.pod_index import ordinal_engines, worker_engines
from kvconfig.load.kubernetes.resources import (
    Found,
    Pod,
    Resource,
    config_maps,
    labelled_role,
    resources_of,
    wrong_type,
)
from kvconfig.load.operator_engine import Engine
from kvconfig.load.script_file import with_kv_role


def _pod_specs(res: Resource) -> list[tuple[tuple[str | int, ...], str]]:
    """(path to each pod spec, name part) of a resource."""
    data = res.data
    kind = data.get("kind")
    spec = data.get("spec")
    if kind == "Pod":
        return [(("spec",), "")] if isinstance(spec, dict) else []
    if kind == "LeaderWorkerSet" and isinstance(spec, dict):
        return _lws_pod_specs(spec, ("spec",), "")
    if kind == "DisaggregatedSet" and isinstance(spec, dict):
        out: list[tuple[tuple[str | int, ...], str]] = []
        for i, role in enumerate(listing(spec.get("roles"))):
            at, lws = _role_lws(role, i)
            if lws is not None:
                out += _lws_pod_specs(lws, at, f"{role.get('name', i)}.")
        return out
    found: list[tuple[str | int, ...]] = []
    _find_pod_specs(spec, ("spec",), found, 0)
    if len(found) == 1:
        return [(found[0], "")]
    return [(p, _name_part(p)) for p in found]


def _role_lws(role: Any, i: int) -> tuple[tuple[str | int, ...], Mapping[str, Any] | None]:
    """Where a ``DisaggregatedSet`` role's LeaderWorkerSet spec is, and the spec: under the
    role's ``spec`` (``disaggregatedset.x-k8s.io/v1``), or inline in the role itself
    (``v1alpha1``: ``DisaggregatedRoleSpec`` embeds ``LeaderWorkerSetSpec`` with
    ``json:",inline"``, kubernetes-sigs/lws ``api/disaggregatedset/v1alpha1``)."""
    at: tuple[str | int, ...] = ("spec", "roles", i)
    if not isinstance(role, dict):
        return at, None
    if isinstance(role.get("spec"), dict):
        return (*at, "spec"), role["spec"]
    return at, role if isinstance(role.get("leaderWorkerTemplate"), dict) else None


def _lws_pod_specs(
    spec: Mapping[str, Any], at: tuple[str | int, ...], part: str
) -> list[tuple[tuple[str | int, ...], str]]:
    """The leader's and the workers' pod specs of a LeaderWorkerSet spec at ``at``."""
    lwt = spec.get("leaderWorkerTemplate")
    out: list[tuple[tuple[str | int, ...], str]] = []
    if isinstance(lwt, dict):
        for which in ("leaderTemplate", "workerTemplate"):
            tpl = lwt.get(which)
            if isinstance(tpl, dict) and isinstance(tpl.get("spec"), dict):
                out.append(((*at, "leaderWorkerTemplate", which, "spec"), part + which[:-8]))
    return out


def _lws_of(res: Resource, path: tuple[str | int, ...]) -> tuple[Mapping[str, Any], str | None]:
    """The LeaderWorkerSet spec around a pod spec, and its DisaggregatedSet role name.

    A ``DisaggregatedSet`` (``api/disaggregatedset/v1/disaggregatedset_types.go``) creates
    one LeaderWorkerSet per ``spec.roles[i]``, whose ``spec`` is that set's spec (its
    ``replicas`` defaults to 1, as a LeaderWorkerSet's does); the role's ``name`` is the
    role its pods serve. ``spec.slices`` (default 1) copies the whole set of roles, one
    LeaderWorkerSet per role and slice (``pkg/controllers/disaggregatedset``: the role's
    target replicas times ``GetSlices``), so a role runs ``replicas`` x ``slices`` groups."""
    kind = res.data.get("kind")
    if kind == "LeaderWorkerSet":
        return res.data["spec"], None
    if kind == "DisaggregatedSet" and len(path) > 3 and path[1] == "roles":
        role = res.data["spec"]["roles"][path[2]]
        return role["spec"] if path[3] == "spec" else role, str(role.get("name"))
    return {}, None


def _name_part(path: tuple[str | int, ...]) -> str:
    parts = [str(p) for p in path if p not in ("spec", "template")]
    return ".".join(parts) or "spec"


def _find_pod_specs(
    node: Any, path: tuple[str | int, ...], out: list[tuple[str | int, ...]], depth: int
) -> None:
    if depth > 12:
        return
    if isinstance(node, dict):
        containers = node.get("containers")
        if isinstance(containers, list) and any(isinstance(c, dict) for c in containers):
            out.append(path)
            return
        for key, value in node.items():
            if key in ("metadata", "status"):
                continue
            _find_pod_specs(value, (*path, key), out, depth + 1)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            _find_pod_specs(value, (*path, i), out, depth + 1)


def _resource_name(res: Resource) -> str:
    data = res.data
    meta = data.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if not isinstance(name, str) or not name:
        name = meta.get("generateName", "") if isinstance(meta, dict) else ""
        name = str(name).rstrip("-") or "unnamed"
    return f"{data.get('kind')}/{name}"


def _template_labels(res: Resource, path: tuple[str | int, ...]) -> Mapping[str, Any]:
    """The labels of the pod template around a pod spec."""
    node: Any = res.data
    for p in path[:-1]:
        node = node[p]
    meta = node.get("metadata") if isinstance(node, dict) else None
    labels = meta.get("labels") if isinstance(meta, dict) else None
    return labels if isinstance(labels, dict) else {}


def _storm_role(res: Resource, path: tuple[str | int, ...]) -> Mapping[str, Any]:
    """The AIBrix role around a pod spec (a ``StormService``'s
    ``spec.template.spec.roles[i]``, or the ``RoleSet`` it makes, ``spec.roles[i]``: its
    ``name`` is the P/D role the AIBrix router and its pods' role-name label use, its
    ``replicas`` the role's pod count; the RoleSet controller's ``pkg/controller/roleset``),
    or an empty mapping."""
    if res.data.get("kind") not in ("StormService", "RoleSet"):
        return {}
    for i in range(len(path) - 1):
        if path[i] == "roles" and isinstance(path[i + 1], int):
            node: Any = res.data
            for p in path[: i + 2]:
                node = node[p]
            return node if isinstance(node, dict) else {}
    return {}


def _count(res: Resource, value: Any, path: tuple[str | int, ...]) -> None:
    """A replica count is an integer: the API server refuses the resource otherwise."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        hint = "write the number of pods, e.g. replicas: 1"
        raise wrong_type(res, value, path, "an integer replica count", hint)


def resource_engines(
    res: Resource, base: Path, found: list[Found], block_lines: frozenset[int]
) -> list[Engine]:
    """The engines of one Kubernetes resource (any kind with pod templates)."""
    out: list[Engine] = []
    data = res.data
    rname = _resource_name(res)
    replicas = data.get("spec", {}).get("replicas") if isinstance(data.get("spec"), dict) else None
    _count(res, replicas, ("spec", "replicas"))
    for path, part in _pod_specs(res):
        labels = _template_labels(res, path)
        storm = _storm_role(res, path)
        if storm:
            _count(res, storm.get("replicas"), (*path[: path.index("roles") + 2], "replicas"))
        lws, lws_role = _lws_of(res, path)
        role = labelled_role(labels) or storm.get("name") or lws_role or pd_role(res, path)
        name = f"{rname}/{part}" if part else rname
        server = server_pod(res, path)
        pod = Pod(res, path, name, block_lines=block_lines)
        if server is not None:  # llm-d's dual pods: the vLLM server is the patched pod's
            pod = Pod(server, ("spec",), f"{name}/server", block_lines=block_lines)
        if role not in ("prefill", "decode") and has_routing_sidecar(pod.spec):
            role = "decode"
        pod.role = role if role in ("prefill", "decode") else None
        env_base, env_unknown = kthena_env(res, path)
        if lws:
            size = lws["leaderWorkerTemplate"].get("size", 1)
            if isinstance(size, int):
                pod.parallelism["nodes"] = size
            # without a leaderTemplate the worker template is the leader's too: a group of
            # one is its leader alone (LWS_WORKER_INDEX 0)
            alone = size == 1 and "leaderTemplate" not in lws["leaderWorkerTemplate"]
            leads = part.endswith("leader") or alone
            env_base, env_unknown = _lws_env(size, "leader" if leads else part)
            if lws_role is not None:
                replicas = lws.get("replicas", 1)
                slices = data["spec"].get("slices", 1)
                _count(res, slices, ("spec", "slices"))
                if isinstance(replicas, int) and isinstance(slices, int):
                    replicas *= slices
        if isinstance(replicas, int):
            pod.parallelism["replicas"] = replicas
        if isinstance(storm.get("replicas"), int):
            scale = replicas if isinstance(replicas, int) and replicas else 1
            pod.parallelism["replicas"] = storm["replicas"] * scale
        copies = role_copies(res, path)  # Kthena: each serving group runs the role's copies
        if copies is not None:
            groups = replicas if isinstance(replicas, int) else 1
            pod.parallelism["replicas"] = copies * groups
        containers = pod.spec.get("containers")
        if not isinstance(containers, list):
            continue
        chart = _image_default(res)
        sidecars = native_sidecars(pod, base, found, env_base, env_unknown)
        out.extend(with_kv_role(e) for e in sidecars)
        for i, container in enumerate(containers):
            implicit = chart and _runs_image_default(container)
            if lws:  # each worker index read, for a script that branches on it
                size = lws["leaderWorkerTemplate"].get("size", 1)
                read = worker_engines(
                    pod, i, base, found, size=size, env_base=env_base,
                    env_unknown=env_unknown, implicit_entry=implicit,
                )  # fmt: skip
            elif data.get("kind") == "StatefulSet" and not implicit:  # each pod's ordinal
                read = ordinal_engines(pod, i, base, found, rname, replicas, env_base, env_unknown)
            else:
                read = read_container(
                    pod, i, base, found, env_base=env_base, env_unknown=env_unknown,
                    implicit_entry=implicit, entry_label="llm-d" if implicit else None,
                )  # fmt: skip
            # a pod no label or role names is the side its kv-transfer config says
            out.extend(with_kv_role(e) for e in read)
    return _serving(ranks_of_one_group(res, out))


def _image_default(res: Resource) -> bool:
    """Whether the llm-d-modelservice chart rendered the resource (its ``helm.sh/chart``
    label). The chart writes a container's ``command`` in its ``vllmServe`` and ``custom``
    modes and fails to render ``custom`` without one (``templates/_helpers.tpl``,
    ``customModelCommand``), so a container it rendered with arguments only comes from
    ``modelCommand: imageDefault``: the image's own entry point runs them, as the values
    reader reads that mode."""
    meta = res.data.get("metadata")
    labels = meta.get("labels") if isinstance(meta, dict) else None
    chart = labels.get("helm.sh/chart") if isinstance(labels, dict) else None
    return isinstance(chart, str) and chart.startswith("llm-d-modelservice-")


def _runs_image_default(container: Any) -> bool:
    """A container given arguments only, on an image other than llm-d's simulator."""
    return (
        isinstance(container, dict)
        and not container.get("command")
        and bool(container.get("args"))
        and not LLM_D_SIMULATOR.search(str(container.get("image")))
    )


def _serving(engines: list[Engine]) -> list[Engine]:
    """The engines that serve: ``vllm serve --headless`` starts no API server, only the
    engine cores of a group whose API server another pod runs (``vllm/entrypoints/cli/
    serve.py``: ``run_headless``; a LeaderWorkerSet's workers beside its leader), so it is
    part of that engine, not one of its own, when the resource has one that serves."""
    headless = [e for e in engines if e.entry != "dynamo.vllm" and "--headless" in e.argv]
    if not headless or len(headless) == len(engines):
        return engines
    return [e for e in engines if e not in headless]


def _lws_env(size: Any, part: str) -> tuple[dict[str, str], list[str]]:
    """The variables LeaderWorkerSet adds to every container of its pods
    (``api/leaderworkerset/v1/leaderworkerset_types.go``): ``LWS_GROUP_SIZE`` (the group's
    ``size``), ``LWS_WORKER_INDEX`` (0 on the leader, the worker's index otherwise) and
    ``LWS_LEADER_ADDRESS`` (the leader pod's address, known at run time)."""
    known = {"LWS_GROUP_SIZE": str(size)} if isinstance(size, int) else {}
    unknown = ["LWS_LEADER_ADDRESS"] + ([] if known else ["LWS_GROUP_SIZE"])
    if part == "leader":
        known["LWS_WORKER_INDEX"] = "0"
    else:
        unknown.append("LWS_WORKER_INDEX")
    return known, unknown


def _kuberay_serve(res: Resource) -> bool:
    """A KubeRay ``RayService`` (``ray.io``) with a ``serveConfigV2``."""
    from kvconfig.load import kuberay

    api = res.data.get("apiVersion")
    return isinstance(api, str) and api.startswith("ray.io/") and kuberay.has_serve_config(res)


_BLOCK_SCALAR = re.compile(r"[:\-]\s+[|>][-+0-9]*\s*(#.*)?$")


def block_scalar_lines(text: str) -> frozenset[int]:
    """Lines that open a YAML block scalar (``|`` or ``>``): the value starts below them."""
    return frozenset(
        i + 1
        for i, row in enumerate(text.splitlines())
        if ("|" in row or ">" in row) and _BLOCK_SCALAR.search(row)
    )


def _is_kserve(res: Resource) -> bool:
    """An ``InferenceService`` whose predictor names a model (one with its own
    ``containers`` is a pod spec, read as any other)."""
    spec = res.data.get("spec")
    predictor = spec.get("predictor") if isinstance(spec, dict) else None
    return str(res.data.get("apiVersion", "")).startswith("serving.kserve.io/") and (
        isinstance(predictor, dict) and isinstance(predictor.get("model"), dict)
    )


def engines(
    docs: Sequence[_yaml.Document],
    base: Path,
    skipped: Sequence[str] = (),
    text: str = "",
    configs: Mapping[str, Any] | None = None,
    *,
    given: Mapping[str, str] | None = None,
    maps: Mapping[tuple[str, str], Mapping[str, str]] | None = None,
) -> list[Engine]:
    """Every vLLM engine of a Kubernetes manifest's documents; ``configs`` are the
    ``LLMInferenceServiceConfig`` specs of the input by name (for ``spec.baseRefs``);
    ``given``: the values the user gives (``--env``) for variables the cluster sets;
    ``maps``: the input's ConfigMaps (``config_maps``)."""
    out: list[Engine] = []
    found: list[Found] = []
    blocks = block_scalar_lines(text) if text else frozenset()
    resources = resources_of(docs, given)
    found_maps = maps if maps is not None else config_maps(resources)
    for res in resources:
        res.config_maps = found_maps
        kind = res.data.get("kind")
        if kind == "LLMInferenceService":
            from kvconfig.load import kserve

            out.extend(kserve.engines(res, base, found, blocks, configs or {}))
        elif kind == "InferenceService" and _is_kserve(res):
            from kvconfig.load import kserve_isvc

            out.extend(kserve_isvc.engines(res, base, found, blocks))
        elif kind == "DynamoGraphDeployment":
            from kvconfig.load import dynamo

            out.extend(dynamo.engines(res, base, found, blocks))
        elif kind == "VLLMRuntime":
            from kvconfig.load import vllm_runtime

            out.extend(vllm_runtime.engines(res, base, found, blocks))
        elif kind == "RayService" and _kuberay_serve(res):
            from kvconfig.load import kuberay

            out.extend(kuberay.engines(res, base, found, blocks))
        elif model_booster.is_model_booster(res.data):
            rendered = _yaml.Document(
                res.source, model_booster.model_serving(res), {(): res.line() or 1}
            )
            made = Resource(rendered, given=res.given, config_maps=found_maps)
            out.extend(
                model_booster.with_model_uri(res, resource_engines(made, base, found, blocks))
            )
        elif llmaz.is_playground(res.data):
            out.extend(llmaz.engines(res, resources, base, found, blocks))
        elif kind == "Model" and str(res.data.get("apiVersion", "")).startswith("kubeai.org/"):
            from kvconfig.load import kubeai

            out.extend(kubeai.engines(res, base, found, blocks))
        else:
            out.extend(resource_engines(res, base, found, blocks))
    if not out:
        source = docs[0].source if docs else ""
        if found:
            shown = "; ".join(f"{f.name} runs {f.runs}" for f in found[:3])
            more = f" and {len(found) - 3} more" if len(found) > 3 else ""
            message = f"no vLLM container found: {shown}{more}"
            line = found[0].line
        else:
            kinds = sorted({str(r.data.get("kind")) for r in resources} | set(skipped))
            message = f"no vLLM container found: no pod template in {', '.join(kinds)}"
            line = resources[0].line() if resources else None
        raise NoEngine(
            message,
            source=source,
            line=line,
            hint="kvconfig reads containers that run 'vllm serve', 'python -m "
            "vllm.entrypoints.openai.api_server' or 'python -m dynamo.vllm', or a "
            "vllm/vllm-openai image given only args",
        )
    return out
