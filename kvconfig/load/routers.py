"""KV-aware routers deployed beside the engines, read from the same operator files.

Each router hashes prompts in blocks of its own size and must agree with the engines'
block size (``kvconfig.fleet.rules.routers``). Read, each by its own source's rule:

* NVIDIA Dynamo's frontend (a ``DynamoGraphDeployment`` component or service of type
  ``frontend``): KV routing when ``--router-mode kv`` or ``DYN_ROUTER_MODE=kv``; its block
  size is ``--kv-cache-block-size`` or ``DYN_KV_CACHE_BLOCK_SIZE``, and when neither is set
  the frontend takes the block size the workers register (``components/src/dynamo/
  frontend/main.py``, ``lib/llm/src/kv_router``).
* Dynamo's endpoint picker for the Gateway API Inference Extension (a service of
  ``componentType: epp``, a v1beta1 component of ``type: epp``): its ``dyn-*`` scorers run
  Dynamo's KV router in blocks of ``DYN_KV_CACHE_BLOCK_SIZE`` ("MUST equal the inference
  engine block size": ``block_size`` of the EPP's configuration in
  ``deploy/inference-gateway``); unset, no block size is read.
* The same frontend and standalone router started by a launch script (``python -m
  dynamo.frontend --router-mode kv &``), read by the one shell reader with the environment
  the script gives each command (``routers_in_file``).
* NVIDIA Dynamo's standalone router (``python -m dynamo.router``, or the older
  ``python -m dynamo.prefill_router`` with ``--block-size``, any service of a
  ``DynamoGraphDeployment`` that runs it): its own block size ``--router-block-size``
  (``--block-size`` in older releases, ``DYN_ROUTER_BLOCK_SIZE``), 128 when unset; it does
  not take the workers' (``components/src/dynamo/router/args.py``, ``backend_args.py``:
  ``DynamoRouterArgGroup``).
* vLLM production-stack's router with ``routerSpec.routingLogic: kvaware`` (chart values):
  it asks LMCache's controller which engine holds the longest prefix
  (``src/vllm_router/routers/routing_logic.py``: ``KvawareRouter``), so it hashes in
  LMCache's chunks, not in vLLM's blocks: read, with no block size to compare.
  The same router set up by the operator's ``VLLMRouter`` (``spec.routingLogic``, then
  ``spec.extraArgs``: ``operator/internal/controller/vllmrouter_controller.go``) or started
  by a container (``vllm-router`` / ``python -m vllm_router.app``, its last
  ``--routing-logic``, as argparse keeps it: ``src/vllm_router/parsers/parser.py``).
* llm-d's endpoint picker (``EndpointPickerConfig``, inline in a KServe
  ``spec.router.scheduler.config.inline`` or as YAML text in chart values): the
  ``precise-prefix-cache-scorer`` / ``precise-prefix-cache-producer`` plugin's
  ``tokenProcessorConfig.blockSize`` (or ``blockSize``) and ``hashSeed`` (llm-d-kv-cache's
  token-processor configuration; unset, the fleet rules take llm-d's default of 16).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

from kvconfig.load.engine_fields import listing, mapping
from kvconfig.load.router_rules import (
    Router,
    as_int,
    epp,
    frontend,
    standalone,
)

PREFIX_PLUGINS = frozenset({"precise-prefix-cache-scorer", "precise-prefix-cache-producer"})
"""llm-d endpoint-picker plugins that hash prompt tokens into the engines' KV blocks (the
approximate ``prefix-cache-scorer`` hashes its own character blocks, or scores what a
precise producer found, and is not read)."""


def _container_env(given: Mapping[str, str], *lists: Any) -> tuple[Any, dict[str, str]]:
    """The env of a router's container from its lists of variables (the graph's, the
    service's, the container's; later ones win), read by the one reader of a container's
    env (``kvconfig.load.kubernetes.env.container_env``, ``given`` the user's ``--env``
    for what the cluster sets), and as a mapping in which a variable only known at run
    time is ``$(NAME)``."""
    from kvconfig.load import yamlfile as _yaml
    from kvconfig.load.kubernetes.env import container_env
    from kvconfig.load.kubernetes.resources import Resource

    items = [
        i for items in lists for i in listing(items)
        if isinstance(i, dict) and isinstance(i.get("name"), str)
    ]  # fmt: skip
    container = {"env": items}
    res = Resource(_yaml.Document("router", container, {}), given=dict(given))
    env = container_env(container, res, (), "router")
    return env, {**{n: f"$({n})" for n in env.unknown}, **env.known}


def _expanded(words: list[str], env: Any) -> list[str]:
    """A container's words with ``$(VAR)`` expanded as Kubernetes expands them
    (``kvconfig.load.kubernetes.env``); a reference left is run-time text."""
    from kvconfig.load.kubernetes.env import expand_k8s

    return [expand_k8s(w, env)[0] for w in words]


def _dynamo(data: Mapping[str, Any], given: Mapping[str, str]) -> Iterator[Router]:
    spec = mapping(data.get("spec"))
    rname = f"DynamoGraphDeployment/{mapping(data.get('metadata')).get('name', 'unnamed')}"
    for sname, service in mapping(spec.get("services")).items():
        if not isinstance(service, dict):
            continue
        main = mapping(mapping(service.get("extraPodSpec")).get("mainContainer"))
        words = [str(w) for w in [*listing(main.get("command")), *listing(main.get("args"))]]
        words = [p for w in words for p in w.split()]
        cenv, env = _container_env(given, spec.get("envs"), service.get("envs"), main.get("env"))
        words = _expanded(words, cenv)
        found = standalone(f"{rname}/{sname}", words, env)
        if found is None and service.get("componentType") == "frontend":
            found = frontend(f"{rname}/{sname}", words, env)
        if found is None and service.get("componentType") == "epp":
            found = epp(f"{rname}/{sname}", env)
        if found is None and sname == "Router" and "DYN_DEPLOYMENT_CONFIG" in env:
            found = _sdk_router(f"{rname}/{sname}", env["DYN_DEPLOYMENT_CONFIG"])
        if found is not None:
            yield found
    for component in listing(spec.get("components")):
        if not isinstance(component, dict):
            continue
        kind = component.get("type")
        pod = mapping(mapping(component.get("podTemplate")).get("spec"))
        name = f"{rname}/{component.get('name', kind)}"
        for container in listing(pod.get("containers")):
            if not isinstance(container, dict):
                continue
            words = [
                str(w)
                for w in [*listing(container.get("command")), *listing(container.get("args"))]
            ]
            cenv, env = _container_env(
                given, spec.get("envs"), component.get("envs"), container.get("env")
            )
            words = _expanded(words, cenv)
            found = standalone(name, words, env)
            if found is None and kind == "frontend":
                found = frontend(name, words, env)
            if found is None and kind == "epp":
                found = epp(name, env)
            if found is None:  # sh -c SCRIPT: the routers its commands start
                from kvconfig.load.router_scripts import in_shell

                found = next(iter(in_shell(name, words, cenv)), None)
            if found is not None:
                yield found
                break


def _sdk_router(name: str, config: str) -> Router | None:
    """The KV-aware ``Router`` service of a ``dynamo deploy`` graph, in blocks of its
    section of the SDK config in ``DYN_DEPLOYMENT_CONFIG`` (``kvconfig.load.dynamo_sdk``);
    None when that is no SDK config."""
    from kvconfig.errors import InputError
    from kvconfig.load import yamlfile
    from kvconfig.load.documents import is_sdk_config
    from kvconfig.load.dynamo_sdk import routers

    try:  # the bounded reader the engines' path reads it with (dynamo_sdk.deployed)
        data = yamlfile.parse(config, name, last_wins=True).data
    except InputError:
        return None
    if not isinstance(data, dict) or not is_sdk_config(data):
        return None
    found = routers(data)
    return replace(found[0], name=name) if found else None


def _picker(config: Mapping[str, Any]) -> Iterator[Router]:
    for plugin in listing(config.get("plugins")):
        if not isinstance(plugin, dict) or plugin.get("type") not in PREFIX_PLUGINS:
            continue
        params = mapping(plugin.get("parameters"))
        tokens = mapping(params.get("tokenProcessorConfig"))
        size = as_int(tokens.get("blockSize", params.get("blockSize")))
        seed = tokens.get("hashSeed", params.get("hashSeed"))
        yield Router(
            "llm-d",
            f"EndpointPickerConfig/{plugin.get('name') or plugin['type']}",
            size,
            str(seed) if seed is not None else None,
        )


def _last_option(words: list[str], name: str) -> str | None:
    """The value argparse keeps for ``name``: its last occurrence."""
    found = None
    for i, w in enumerate(words):
        if w == name and i + 1 < len(words):
            found = words[i + 1]
        elif w.startswith(name + "="):
            found = w.split("=", 1)[1]
    return found


def _production_stack(node: Mapping[str, Any]) -> Router | None:
    """production-stack's router in kvaware mode: a ``VLLMRouter`` or a container that
    runs ``vllm-router`` (``python -m vllm_router.app``)."""
    if node.get("kind") == "VLLMRouter":
        spec = mapping(node.get("spec"))
        words = ["--routing-logic", str(spec.get("routingLogic") or "")]
        words += [str(w) for w in listing(spec.get("extraArgs"))]
        name = f"VLLMRouter/{mapping(node.get('metadata')).get('name', 'unnamed')}"
    elif isinstance(node.get("command"), list) or isinstance(node.get("args"), list):
        words = [str(w) for w in [*listing(node.get("command")), *listing(node.get("args"))]]
        words = [p.strip("\"'") for w in words for p in w.split()]
        if not any(w in ("vllm_router.app", "vllm-router") or w.endswith("/vllm-router")
                   for w in words):  # fmt: skip
            return None
        name = f"container/{node.get('name', 'unnamed')}"
    else:
        return None
    if _last_option(words, "--routing-logic") != "kvaware":
        return None
    return Router("production-stack", name, None)


def _walk(node: Any, depth: int = 0) -> Iterator[Router]:
    """Every endpoint-picker config in a document: mappings, and YAML text holding one."""
    if depth > 24:
        return
    if isinstance(node, dict):
        spec = node.get("routerSpec")
        if isinstance(spec, dict) and spec.get("enableRouter", True) is not False:
            # the chart passes --routing-logic, then routerSpec.extraArgs
            # (helm/templates/deployment-router.yaml; rendered when enableRouter is true)
            words = ["--routing-logic", str(spec.get("routingLogic") or "")]
            words += [str(w) for w in listing(spec.get("extraArgs"))]
            if _last_option(words, "--routing-logic") == "kvaware":
                yield Router("production-stack", "routerSpec", None)
        found = _production_stack(node)
        if found is not None:
            yield found
        if node.get("kind") == "EndpointPickerConfig":
            yield from _picker(node)
            return
        for value in node.values():
            yield from _walk(value, depth + 1)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value, depth + 1)
    elif isinstance(node, str) and "EndpointPickerConfig" in node and "\n" in node:
        import yaml

        try:
            inner = yaml.safe_load(node)
        except yaml.YAMLError:
            return
        yield from _walk(inner, depth + 1)


def routers_in_file(
    text: str, source: str, env: Mapping[str, str] | None = None, path: str | None = None
) -> list[Router]:
    """The KV-aware routers of a file's text: a launch script's (``script_routers``; ``path``
    the script's absolute path, its ``$0``), else those of its YAML documents
    (``routers_of``; text that is not YAML holds none)."""
    import yaml

    from kvconfig.load.script_file import script_dialect

    if script_dialect(text, source) is not None:
        from kvconfig.load.router_scripts import script_routers

        return script_routers(text, source, env, path)
    try:
        docs = list(yaml.safe_load_all(text))
    except yaml.YAMLError:
        return []
    return routers_of(docs, env)


def routers_of(docs: list[Any], given: Mapping[str, str] | None = None) -> list[Router]:
    """The KV-aware routers of an operator file's parsed documents; ``given``: the values
    the user gives (``--env``) for variables the cluster sets."""
    from kvconfig.load.documents import kind_of
    from kvconfig.load.helm.kinds import is_semantic_router_dynamo

    out: list[Router] = []
    for doc in docs:
        data = doc
        if isinstance(doc, dict) and is_semantic_router_dynamo(doc):
            from kvconfig.load.helm.semantic_router import render

            data = render(doc)  # the graph its chart renders
        if isinstance(data, dict) and data.get("kind") == "DynamoGraphDeployment":
            out.extend(_dynamo(data, given or {}))
        elif isinstance(data, dict) and kind_of(data) == "skypilot":
            from kvconfig.load.skypilot import task_routers

            out.extend(task_routers(data, given or {}))
        elif isinstance(data, dict) and kind_of(data) == "dynamo-sdk":
            from kvconfig.load.dynamo_sdk import routers

            out.extend(routers(data))
        else:
            out.extend(_walk(data))
            out.extend(_pods(data, given or {}))
    return out


_ROUTER_MODULE = re.compile(r"dynamo\.(?:frontend|router|prefill_router)\b")
"""The modules ``kvconfig.load.router_scripts`` reads as routers."""


def _pods(
    node: Any, given: Mapping[str, str], name: str = "pod", depth: int = 0
) -> Iterator[Router]:
    """The Dynamo routers the containers of a Kubernetes pod spec start (a Pod, a
    Deployment's template, a LeaderWorkerSet's): their command and args, or the
    ``sh -c`` script they run (``kvconfig.load.router_scripts``), with the container's
    env."""
    from kvconfig.load.router_scripts import in_shell, started
    from kvconfig.load.shell.state import Command

    if depth > 24:
        return
    if isinstance(node, list):
        for value in node:
            yield from _pods(value, given, name, depth + 1)
        return
    if not isinstance(node, dict):
        return
    name = str(mapping(node.get("metadata")).get("name") or name)
    for container in listing(node.get("containers")):
        if not isinstance(container, dict):
            continue
        words = [
            str(w) for w in [*listing(container.get("command")), *listing(container.get("args"))]
        ]
        if not _ROUTER_MODULE.search(repr((words, container.get("env")))):
            continue  # names no Dynamo router module: no shell need run (the common case)
        cenv, env = _container_env(given, container.get("env"))
        label = f"{name}/{container.get('name') or 'container'}"
        yield from started(label, [Command(tuple(_expanded(words, cenv)), env)])
        yield from in_shell(label, words, cenv)
    for key, value in node.items():
        if key != "containers":
            yield from _pods(value, given, name, depth + 1)
