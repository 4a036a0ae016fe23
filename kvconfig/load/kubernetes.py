"""vLLM engines in Kubernetes manifests.

Every pod template of every resource is read: ``Pod``, ``Deployment``, ``StatefulSet``,
``ReplicaSet``, ``DaemonSet``, ``Job``, ``CronJob``, ``LeaderWorkerSet`` (leader and worker
templates) and any custom resource that holds a pod spec (a mapping with ``containers``).
A container is a vLLM engine when its command line starts a vLLM server
(``kvconfig.load.engines.server_start``), directly, in a ``sh -c``/``bash -c`` script
(``kvconfig.load.shell``), or as the ``args`` of a vLLM image's own entry point.

Kubernetes expands ``$(VAR)`` in ``command`` and ``args`` from the container's ``env``
before anything runs; kvconfig does the same with literal values. A variable set with
``valueFrom`` (or possibly by ``envFrom``) has a value only the cluster knows: the word
stays as written and the engine says so. A ``$(VAR)`` that no variable defines reaches
vLLM as that text, which is an error.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kvconfig.errors import InputError
from kvconfig.load import yamlfile as _yaml
from kvconfig.load.engines import (
    Engine,
    Note,
    check_words,
    gpu_fields,
    image_version,
    is_vllm_image,
    server_start,
)
from kvconfig.load.gpu_labels import GPU_LABELS

_SHELLS = frozenset({"sh", "bash", "dash", "ash", "zsh", "ksh"})
_K8S_VAR = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


@dataclass
class Resource:
    """A resource inside a document (a ``List`` holds several), with its lines."""

    doc: _yaml.Document
    prefix: tuple[str | int, ...] = ()

    @property
    def data(self) -> Any:
        node: Any = self.doc.data
        for p in self.prefix:
            node = node[p]
        return node

    @property
    def source(self) -> str:
        return self.doc.source

    def line(self, *path: str | int) -> int | None:
        if not path and not self.prefix:
            return self.doc.lines.get(())
        return self.doc.line(*self.prefix, *path)

    def err(self, message: str, path: Sequence[str | int], key: str, hint: str) -> InputError:
        return InputError(message, source=self.source, line=self.line(*path), key=key, hint=hint)


@dataclass
class Pod:
    """What a pod spec says beyond its containers: GPU labels, role, name parts."""

    resource: Resource
    path: tuple[str | int, ...]
    name: str
    role: str | None = None
    extra_gpu: list[str] = field(default_factory=list)
    parallelism: dict[str, int] = field(default_factory=dict)
    block_lines: frozenset[int] = frozenset()

    @property
    def spec(self) -> Mapping[str, Any]:
        node: Any = self.resource.data
        for p in self.path:
            if not isinstance(node, (dict, list)):
                return {}
            try:
                node = node[p]  # type: ignore[index]
            except (KeyError, IndexError, TypeError):
                return {}
        return node if isinstance(node, dict) else {}


def _describe(value: Any) -> str:
    kinds = {bool: "boolean", int: "integer", float: "number", dict: "mapping", list: "list"}
    return f"the {kinds.get(type(value), type(value).__name__)} {value!r}"


def strings(value: Any, res: Resource, path: tuple[str | int, ...], key: str) -> list[str]:
    """A container's ``command`` or ``args``: a list of strings, as Kubernetes requires."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise res.err(
            f"{path[-1]}: expected a list of strings, got {_describe(value)}",
            path,
            key,
            f'write {path[-1]}: ["...", "..."]',
        )
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise res.err(
                f"{path[-1]}[{i}]: expected a string, got {_describe(item)}; Kubernetes "
                "refuses the manifest",
                (*path, i),
                key,
                f'quote it: "{item}"',
            )
        out.append(item)
    return out


@dataclass
class ContainerEnv:
    """A container's environment as far as the manifest says it."""

    known: dict[str, str] = field(default_factory=dict)
    unknown: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)

    def shell_env(self) -> dict[str, str | None]:
        env: dict[str, str | None] = dict(self.known)
        for name in self.unknown:
            env[name] = None
        return env


def container_env(
    container: Mapping[str, Any],
    res: Resource,
    path: tuple[str | int, ...],
    key: str,
    base: Mapping[str, str] | None = None,
) -> ContainerEnv:
    """``env`` and ``envFrom`` of a container: literal values (``$(VAR)`` of earlier
    variables expanded, as Kubernetes does), names set from elsewhere, and whole sources."""
    env = ContainerEnv(known=dict(base or {}))
    items = container.get("env") or []
    if not isinstance(items, list):
        raise res.err(
            f"env: expected a list of name/value pairs, got {_describe(items)}",
            (*path, "env"),
            key,
            "write env: [{name: NAME, value: VALUE}]",
        )
    for i, item in enumerate(items):
        where = (*path, "env", i)
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise res.err(
                f"env[{i}]: expected a mapping with a name", where, key, "write {name: X, value: Y}"
            )
        name = item["name"]
        if "valueFrom" in item:
            env.known.pop(name, None)
            if name not in env.unknown:
                env.unknown.append(name)
            continue
        value = item.get("value", "")
        if not isinstance(value, str):
            value = (
                ""
                if value is None
                else str(value).lower()
                if isinstance(value, bool)
                else str(value)
            )
        expanded, _ = expand_k8s(value, env)
        if name in env.unknown:
            env.unknown.remove(name)
        env.known[name] = expanded
    sources = container.get("envFrom") or []
    if isinstance(sources, list):
        for item in sources:
            if not isinstance(item, dict):
                continue
            for ref in ("configMapRef", "secretRef"):
                if isinstance(item.get(ref), dict):
                    env.sources.append(f"{ref} {item[ref].get('name', '?')}")
    return env


def expand_k8s(text: str, env: ContainerEnv) -> tuple[str, list[tuple[str, str]]]:
    """``$(VAR)`` references expanded as Kubernetes does; (name, why) of those left."""
    left: list[tuple[str, str]] = []

    def repl(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        name = m.group(1)
        if name in env.known:
            return env.known[name]
        left.append((name, "unknown" if name in env.unknown or env.sources else "undefined"))
        return m.group(0)

    return _K8S_VAR.sub(repl, text), left


# --------------------------------------------------------------------------- pods


def _gpu_labels(spec: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """(required GPU names, preferred GPU names) of a pod spec."""
    required: list[str] = []
    preferred: list[str] = []
    selector = spec.get("nodeSelector")
    if isinstance(selector, dict):
        for label in GPU_LABELS:
            value = selector.get(label)
            if isinstance(value, str) and value:
                required.append(value)
                break
    affinity = spec.get("affinity")
    node = affinity.get("nodeAffinity") if isinstance(affinity, dict) else None
    if isinstance(node, dict):
        req = node.get("requiredDuringSchedulingIgnoredDuringExecution")
        terms = req.get("nodeSelectorTerms") if isinstance(req, dict) else None
        for term in terms if isinstance(terms, list) else []:
            required.extend(_match_values(term))
        prefs = node.get("preferredDuringSchedulingIgnoredDuringExecution")
        for pref in prefs if isinstance(prefs, list) else []:
            if isinstance(pref, dict):
                preferred.extend(_match_values(pref.get("preference")))
    return required, preferred


def _match_values(term: Any) -> list[str]:
    out: list[str] = []
    if not isinstance(term, dict):
        return out
    for expr in term.get("matchExpressions") or []:
        if (
            isinstance(expr, dict)
            and expr.get("key") in GPU_LABELS
            and expr.get("operator") == "In"
            and isinstance(expr.get("values"), list)
        ):
            out.extend(str(v) for v in expr["values"])
    return out


def _gpu_count(container: Mapping[str, Any]) -> int | None:
    resources = container.get("resources")
    if not isinstance(resources, dict):
        return None
    for part in ("limits", "requests"):
        block = resources.get(part)
        if isinstance(block, dict):
            for name in ("nvidia.com/gpu", "amd.com/gpu", "gpu"):
                value = block.get(name)
                try:
                    return int(str(value)) if value is not None else None
                except ValueError:
                    return None
    return None


def _pod_specs(res: Resource) -> list[tuple[tuple[str | int, ...], str]]:
    """(path to each pod spec, name part) of a resource."""
    data = res.data
    kind = data.get("kind")
    spec = data.get("spec")
    if kind == "Pod":
        return [(("spec",), "")] if isinstance(spec, dict) else []
    if kind == "LeaderWorkerSet" and isinstance(spec, dict):
        lwt = spec.get("leaderWorkerTemplate")
        out: list[tuple[tuple[str | int, ...], str]] = []
        if isinstance(lwt, dict):
            for which in ("leaderTemplate", "workerTemplate"):
                tpl = lwt.get(which)
                if isinstance(tpl, dict) and isinstance(tpl.get("spec"), dict):
                    out.append((("spec", "leaderWorkerTemplate", which, "spec"), which[:-8]))
        return out
    found: list[tuple[str | int, ...]] = []
    _find_pod_specs(spec, ("spec",), found, 0)
    if len(found) == 1:
        return [(found[0], "")]
    return [(p, _name_part(p)) for p in found]


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


# --------------------------------------------------------------------------- containers


@dataclass
class Found:
    """What a container runs, for the error when no vLLM container is found."""

    name: str
    runs: str
    line: int | None = None


def read_container(
    pod: Pod,
    index: int,
    base: Path,
    found: list[Found],
    *,
    implicit_entry: bool = False,
    env_base: Mapping[str, str] | None = None,
    env_unknown: Sequence[str] = (),
    entry_label: str | None = None,
) -> list[Engine]:
    """The vLLM engines one container starts (none, one, or an error for two)."""
    res = pod.resource
    cpath = (*pod.path, "containers", index)
    container = pod.spec["containers"][index]
    if not isinstance(container, dict):
        return []
    cname = str(container.get("name") or f"containers[{index}]")
    name = f"{pod.name}/{cname}"
    line = res.line(*cpath)
    image = container.get("image") if isinstance(container.get("image"), str) else None
    command = strings(container.get("command"), res, (*cpath, "command"), name)
    args = strings(container.get("args"), res, (*cpath, "args"), name)
    env = container_env(container, res, cpath, name, env_base)
    for extra in env_unknown:
        if extra not in env.unknown:
            env.unknown.append(extra)
    words = command + args
    places = [(*cpath, "command", i) for i in range(len(command))] + [
        (*cpath, "args", i) for i in range(len(args))
    ]
    expanded: list[str] = []
    left: list[tuple[int, str, str]] = []
    for i, w in enumerate(words):
        text, refs = expand_k8s(w, env)
        expanded.append(text)
        left.extend((i, n, why) for n, why in refs)
    vllm_image = is_vllm_image(image)
    starts: list[
        tuple[str, str, list[str], Mapping[str, str | None], list[tuple[int, str]], int | None]
    ]
    starts = []
    shell_at = _shell_script(expanded)
    if shell_at is not None:
        script = expanded[shell_at]
        item_line = res.line(*places[shell_at])
        script_line = (
            item_line + 1 if item_line is not None and item_line in pod.block_lines else item_line
        )
        from kvconfig.load import shell

        positional = expanded[shell_at + 1 :]
        for cmd in shell.commands(
            script,
            env.shell_env(),
            positional,
            unknown_rest=bool(env.sources),
            source=res.source,
            line=script_line,
            key=name,
        ):
            start = server_start(cmd.words)
            if start is not None:
                offset = len(cmd.words) - len(start[2])
                unknown_here = [(i - offset, w) for i, w in cmd.unknown if i >= offset]
                starts.append((*start, cmd.env, unknown_here, cmd.line))
        runs = "a shell script"
    else:
        start = server_start(expanded) if command or not (vllm_image or implicit_entry) else None
        if start is None and not command and (vllm_image or implicit_entry):
            start = ("image entry point", "serve", expanded)
            if expanded[:1] == ["serve"]:
                raise res.err(
                    "args start with 'serve', but the image already runs 'vllm serve': vLLM "
                    "would stop with 'unrecognized arguments'",
                    places[0] if places else cpath,
                    name,
                    "leave 'serve' out of args, or set command: [vllm, serve]",
                )
        if start is not None:
            undefined = [(i, n) for i, n, why in left if why == "undefined"]
            if undefined:
                i, var = undefined[0]
                raise res.err(
                    f"$({var}) is not defined in the container's env: Kubernetes passes the "
                    f"text '$({var})' to vLLM unchanged",
                    places[i],
                    name,
                    f"define {var} under env, or write the value",
                )
            offset = len(expanded) - len(start[2])
            unknown = [(i - offset, f"$({n})") for i, n, _ in left if i >= offset]
            starts.append((*start, env.shell_env(), unknown, line))
        shown = expanded[:3] if expanded[1:2] == ["-m"] else expanded[:2]
        runs = " ".join(shown) if expanded else f"the image {image or '?'}'s entry point"
    if not starts:
        found.append(Found(name, runs, line))
        return []
    if len(starts) > 1:
        lines = ", ".join(str(s[5]) for s in starts if s[5] is not None)
        raise res.err(
            f"two candidate vLLM commands in one container (lines {lines}); kvconfig cannot "
            "tell which one runs",
            cpath,
            name,
            "run each vLLM server in its own container, or keep one command",
        )
    entry, parser, argv, run_env, unknown, at = starts[0]
    check_words(argv, res.source, at, name)
    notes: list[Note] = []
    for i, what in unknown:
        option = argv[i - 1] if 0 < i <= len(argv) and argv[i - 1].startswith("-") else ""
        notes.append(
            Note(
                "unknown-value",
                f"{what} in argument {i + 1} of vLLM is only known at run time",
                at,
                option or ("model" if i == 0 else ""),
            )
        )
    role = pod.role
    defaults: dict[str, Any] = {}
    if entry == "dynamo.vllm":
        from kvconfig.load import dynamo

        split = dynamo.split_args(argv, at)
        argv, notes, defaults = split.argv, [*notes, *split.notes], split.defaults
        role = split.role or role
    version, vnotes = image_version(image, res.line(*cpath, "image") or line)
    notes.extend(vnotes)
    required, preferred = _gpu_labels(pod.spec)
    labels = [*required, *pod.extra_gpu]
    gpu, platforms, gnotes = gpu_fields(labels, res.line(*pod.path) or line)
    notes.extend(gnotes)
    if not labels and preferred:
        notes.append(
            Note(
                "preferred-gpu",
                f"the pod prefers {', '.join(preferred)} but does not require it; kvconfig "
                "reads only required node affinity",
                res.line(*pod.path, "affinity"),
                "affinity",
            )
        )
    known_env = {k: v for k, v in run_env.items() if v is not None}
    unknown_env = sorted({k for k, v in run_env.items() if v is None} | set(env.unknown))
    parallelism = dict(pod.parallelism)
    gpus = _gpu_count(container)
    if gpus is not None:
        parallelism["gpus"] = gpus
    return [
        Engine(
            name=name,
            source=res.source,
            line=at or line,
            argv=tuple(argv),
            entry=entry_label or entry,
            parser=parser,
            env=known_env,
            env_unknown=tuple(unknown_env),
            env_from=tuple(env.sources),
            gpu=gpu,
            platforms=platforms,
            vllm_version=version,
            image=image,
            role=role,
            parallelism=parallelism,
            defaults=defaults,
            base=str(base),
            notes=tuple(notes),
        )
    ]


def _shell_script(words: Sequence[str]) -> int | None:
    """Index of the script in ``sh -c SCRIPT ...`` (any ``-xc`` style flag), or None."""
    if not words or os.path.basename(words[0]) not in _SHELLS:
        return None
    i = 1
    while i < len(words) and words[i].startswith("-"):
        if "c" in words[i][1:] and not words[i].startswith("--"):
            return i + 1 if i + 1 < len(words) else None
        i += 1
    return None


# --------------------------------------------------------------------------- resources


def resource_engines(
    res: Resource, base: Path, found: list[Found], block_lines: frozenset[int]
) -> list[Engine]:
    """The engines of one Kubernetes resource (any kind with pod templates)."""
    out: list[Engine] = []
    data = res.data
    rname = _resource_name(res)
    replicas = data.get("spec", {}).get("replicas") if isinstance(data.get("spec"), dict) else None
    for path, part in _pod_specs(res):
        labels = _template_labels(res, path)
        role = labels.get("llm-d.ai/role")
        pod = Pod(
            res,
            path,
            f"{rname}/{part}" if part else rname,
            role=role if role in ("prefill", "decode") else None,
            block_lines=block_lines,
        )
        if data.get("kind") == "LeaderWorkerSet":
            size = data["spec"]["leaderWorkerTemplate"].get("size")
            if isinstance(size, int):
                pod.parallelism["nodes"] = size
        if isinstance(replicas, int):
            pod.parallelism["replicas"] = replicas
        containers = pod.spec.get("containers")
        if not isinstance(containers, list):
            continue
        for i in range(len(containers)):
            out.extend(read_container(pod, i, base, found))
    return out


def block_scalar_lines(text: str) -> frozenset[int]:
    """Lines that open a YAML block scalar (``|`` or ``>``): the value starts below them."""
    return frozenset(
        i + 1
        for i, row in enumerate(text.splitlines())
        if re.search(r"[:\-]\s+[|>][-+0-9]*\s*(#.*)?$", row)
    )


def engines(
    docs: Sequence[_yaml.Document],
    base: Path,
    skipped: Sequence[str] = (),
    text: str = "",
) -> list[Engine]:
    """Every vLLM engine of a Kubernetes manifest's documents."""
    out: list[Engine] = []
    found: list[Found] = []
    blocks = block_scalar_lines(text) if text else frozenset()
    resources: list[Resource] = []
    for doc in docs:
        if isinstance(doc.data, dict) and doc.data.get("kind") == "List":
            items = doc.data.get("items")
            for i, item in enumerate(items if isinstance(items, list) else []):
                if isinstance(item, dict) and "kind" in item:
                    resources.append(Resource(doc, ("items", i)))
        else:
            resources.append(Resource(doc))
    for res in resources:
        kind = res.data.get("kind")
        if kind == "LLMInferenceService":
            from kvconfig.load import kserve

            out.extend(kserve.engines(res, base, found, blocks))
        elif kind == "DynamoGraphDeployment":
            from kvconfig.load import dynamo

            out.extend(dynamo.engines(res, base, found, blocks))
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
        raise InputError(
            message,
            source=source,
            line=line,
            hint="kvconfig reads containers that run 'vllm serve', 'python -m "
            "vllm.entrypoints.openai.api_server' or 'python -m dynamo.vllm', or a "
            "vllm/vllm-openai image given only args",
        )
    return out
