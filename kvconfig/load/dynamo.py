"""NVIDIA Dynamo: ``DynamoGraphDeployment`` resources and ``python -m dynamo.vllm``.

A ``DynamoGraphDeployment`` (v1alpha1) lists services under ``spec.services``; each vLLM worker's
container is ``extraPodSpec.mainContainer`` (``command`` and ``args``, or, in older
manifests, one ``args`` string the operator runs with ``/bin/sh -c``), its environment
``spec.envs`` and the service's ``envs``, its GPU count ``resources.limits.gpu``, its role
``subComponentType`` (``prefill``; a ``decode`` label alone makes no decode worker,
``_role``). v1beta1 lists ``spec.components[]``, each with a Kubernetes ``podTemplate``
(the worker's container is named ``main``), ``replicas`` and the same ``subComponentType``.

``python -m dynamo.vllm`` (``components/src/dynamo/vllm/args.py``) reads its own
options with ``parse_known_args`` and hands every other word to vLLM's engine argument
parser (``--model`` is an option there). After parsing it sets ``block_size`` to 16 and
``enable_prefix_caching`` to true when vLLM's arguments leave them unset; the engine
records those as ``defaults``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvconfig.load.dynamo_args import decode_workers, one_launcher
from kvconfig.load.engine_fields import mapping
from kvconfig.load.operator_engine import Engine

if TYPE_CHECKING:
    from kvconfig.load.kubernetes.resources import Found, Resource


def engines(
    res: Resource, base: Path, found: list[Found], block_lines: frozenset[int]
) -> list[Engine]:
    """The vLLM workers of a ``DynamoGraphDeployment``: one engine per service."""
    from kvconfig.load.kubernetes.containers import read_container
    from kvconfig.load.kubernetes.resources import Pod

    data = res.data
    spec = data.get("spec")
    services = spec.get("services") if isinstance(spec, dict) else None
    meta = mapping(data.get("metadata"))
    rname = f"DynamoGraphDeployment/{meta.get('name', 'unnamed')}"
    out: list[Engine] = []
    if isinstance(spec, dict) and isinstance(spec.get("components"), list):
        return decode_workers(one_launcher(_components(res, spec, rname, base, found, block_lines)))
    if not isinstance(services, dict):
        return out
    global_env = _envs(spec.get("envs"))
    for sname, service in services.items():
        if not isinstance(service, dict):
            continue
        extra = mapping(service.get("extraPodSpec"))
        main = extra.get("mainContainer")
        if not isinstance(main, dict):
            continue
        container = dict(main)
        container.setdefault("name", "main")
        if (
            "command" not in container
            and isinstance(container.get("args"), list)
            and len(container["args"]) == 1
            and " " in str(container["args"][0])
        ):
            container["command"] = ["/bin/sh", "-c"]
        env = {**global_env, **_envs(service.get("envs"))}
        unknown = (
            [f"envFromSecret {service['envFromSecret']}"] if service.get("envFromSecret") else []
        )
        pod_spec = {k: v for k, v in extra.items() if k != "mainContainer"}
        pod_spec["containers"] = [container]
        path = ("spec", "services", sname, "extraPodSpec")
        role = service.get("subComponentType")
        pod = Pod(
            _Shim(res, path, pod_spec, (*path, "mainContainer")),  # type: ignore[arg-type]
            (),
            f"{rname}/{sname}",
            role=_role(role),
            block_lines=block_lines,
        )
        limits = (
            service.get("resources", {}).get("limits")
            if isinstance(service.get("resources"), dict)
            else None
        )
        if isinstance(limits, dict) and str(limits.get("gpu", "")).isdigit():
            pod.parallelism["gpus"] = int(limits["gpu"])
        multinode = service.get("multinode")
        if isinstance(multinode, dict) and isinstance(multinode.get("nodeCount"), int):
            pod.parallelism["nodes"] = multinode["nodeCount"]
        if isinstance(service.get("replicas"), int):
            pod.parallelism["replicas"] = service["replicas"]
        engines_here = _kv_side(read_container(pod, 0, base, found, env_base=env))
        if not engines_here and "DYN_DEPLOYMENT_CONFIG" in env:  # a Dynamo 0.x SDK graph
            engines_here = _sdk_worker(res, sname, service, env, base, f"{rname}/{sname}")
        from dataclasses import replace

        out.extend(
            replace(e, env_from=(*e.env_from, *unknown)) if unknown else e for e in engines_here
        )
    return decode_workers(one_launcher(out))


def _sdk_worker(  # noqa: PLR0917 (one call site)
    res: Resource,
    sname: str,
    service: dict[str, Any],
    env: Mapping[str, str],
    base: Path,
    name: str,
) -> list[Engine]:
    """The vLLM worker a ``dynamo deploy`` graph's service runs (``dynamo serve GRAPH
    --service-name NAME``, its SDK config in ``DYN_DEPLOYMENT_CONFIG``:
    ``kvconfig.load.dynamo_sdk.deployed``): as many copies as the service's replicas
    times the config's ``ServiceArgs.workers``."""
    from dataclasses import replace

    from kvconfig.load.dynamo_sdk import deployed

    line = res.line("spec", "services", sname)
    found = deployed(env["DYN_DEPLOYMENT_CONFIG"], sname, res.source, base, name=name, line=line)
    if found is None:
        return []
    replicas = service.get("replicas", 1)
    workers = found.parallelism.get("replicas")
    if isinstance(replicas, bool) or not isinstance(replicas, int) or workers is None:
        return [replace(found, parallelism={})]
    return [replace(found, parallelism={"replicas": replicas * workers})]


def _role(sub_component_type: Any) -> str | None:
    """The role a service's ``subComponentType`` gives its worker: ``prefill``. A
    ``decode`` label alone is no role: ``dynamo.vllm`` without ``--disaggregation-mode``
    runs aggregated (Dynamo's profiler turns a graph aggregated by taking the flags off
    its decode worker, keeping the label), and
    in a graph with prefill workers the other workers are its decode workers
    (``decode_workers``) whatever their label."""
    return "prefill" if sub_component_type == "prefill" else None


def _components(  # noqa: PLR0917 (one call site)
    res: Resource,
    spec: dict[str, Any],
    rname: str,
    base: Path,
    found: list[Found],
    block_lines: frozenset[int],
) -> list[Engine]:
    """``DynamoGraphDeployment`` v1beta1: ``spec.components[]``, each a Kubernetes pod
    template (``podTemplate.spec``, the worker's container named ``main``), its
    ``replicas``, its ``subComponentType`` (``prefill``/``decode``) and ``multinode``."""
    from kvconfig.load.kubernetes.containers import read_container
    from kvconfig.load.kubernetes.resources import Pod

    out: list[Engine] = []
    global_env = _envs(spec.get("envs"))
    for i, component in enumerate(spec["components"]):
        if not isinstance(component, dict):
            continue
        template = mapping(component.get("podTemplate"))
        pod_spec = template.get("spec")
        containers = pod_spec.get("containers") if isinstance(pod_spec, dict) else None
        if not isinstance(containers, list):
            continue
        path = ("spec", "components", i, "podTemplate", "spec")
        role = component.get("subComponentType")
        pod = Pod(
            res,
            path,
            f"{rname}/{component.get('name', i)}",
            role=_role(role),
            block_lines=block_lines,
        )
        multinode = component.get("multinode")
        if isinstance(multinode, dict) and isinstance(multinode.get("nodeCount"), int):
            pod.parallelism["nodes"] = multinode["nodeCount"]
        if isinstance(component.get("replicas"), int):
            pod.parallelism["replicas"] = component["replicas"]
        env = {**global_env, **_envs(component.get("envs"))}
        for index in range(len(containers)):
            out.extend(_kv_side(read_container(pod, index, base, found, env_base=env)))
    return out


def _kv_side(engines: list[Engine]) -> list[Engine]:
    """A graph's engine that is no ``dynamo.vllm`` worker (``vllm serve``, ``vllm-rs
    serve`` beside a sidecar) and that nothing else gives a role: the side its
    ``--kv-transfer-config`` says, as for any pod (``kvconfig.load.script_file``)."""
    from kvconfig.load.script_file import with_kv_role

    return [e if e.entry == "dynamo.vllm" else with_kv_role(e) for e in engines]


def _envs(items: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and isinstance(item.get("name"), str) and "value" in item:
            out[item["name"]] = str(item["value"])
    return out


class _Shim:
    """A view of a synthetic pod spec whose lines are those of the real resource."""

    def __init__(
        self,
        res: Resource,
        path: tuple[str | int, ...],
        pod_spec: dict[str, Any],
        container_at: tuple[str | int, ...],
    ) -> None:
        self.res = res
        self.path = path
        self._data = pod_spec
        self.doc = res.doc
        self.container_at = container_at

    @property
    def data(self) -> Any:
        return self._data

    @property
    def source(self) -> str:
        return self.res.source

    @property
    def given(self) -> Mapping[str, str]:
        return self.res.given

    def line(self, *path: str | int) -> int | None:
        if path[:2] == ("containers", 0):
            return self.res.line(*self.container_at, *path[2:])
        return self.res.line(*self.path, *path)

    def err(self, message: str, path: Sequence[str | int], key: str, hint: str) -> Any:
        from kvconfig.errors import InputError

        return InputError(message, source=self.source, line=self.line(*path), key=key, hint=hint)
