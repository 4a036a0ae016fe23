"""A Kubernetes resource and its pod specs as read, with the file lines of their values."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kvconfig.errors import InputError
from kvconfig.load import yamlfile as _yaml

ROLE_LABELS = ("llm-d.ai/role", "llumnix.io/infer-type")
"""Pod labels that name an engine's P/D role: llm-d's, and Llumnix's (``prefill``,
``decode`` or ``neutral``, as its discovery sidecar registers the instance with
``--instance_type``: llumnix-project/llumnix ``deploy/``, ``pkg/resolver``)."""


def labelled_role(labels: Mapping[str, Any]) -> str | None:
    """The role the first of ``ROLE_LABELS`` a pod template has names."""
    return next((str(labels[k]) for k in ROLE_LABELS if labels.get(k)), None)


@dataclass
class Resource:
    """A resource inside a document (a ``List`` holds several), with its lines."""

    doc: _yaml.Document
    prefix: tuple[str | int, ...] = ()
    given: Mapping[str, str] = field(default_factory=dict)
    """Values the user gives (``--env``) for variables the manifest leaves to the cluster
    (``valueFrom``, ``envFrom``): ``kvconfig.load.kubernetes.env.container_env``."""
    config_maps: Mapping[tuple[str, str], Mapping[str, str]] = field(default_factory=dict)
    """The ConfigMaps of the same input, (namespace or "", name) -> their ``data``: what a
    pod's ``configMapKeyRef`` and ``envFrom`` read when the input creates them."""

    @property
    def namespace(self) -> str:
        meta = self.data.get("metadata") if isinstance(self.data, dict) else None
        ns = meta.get("namespace") if isinstance(meta, dict) else None
        return ns if isinstance(ns, str) else ""

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


class _Located(Protocol):
    @property
    def source(self) -> str: ...

    def err(self, message: str, path: Sequence[str | int], key: str, hint: str) -> Any: ...


def wrong_type(
    res: _Located, value: Any, path: Sequence[str | int], expected: str, hint: str
) -> InputError:
    """A field of ``res`` of another type than the API server takes (it refuses the
    object). A ``${NAME}`` there is a template's placeholder (envsubst, a deploy script's
    sed)."""
    if isinstance(value, str) and re.fullmatch(r"\$\{?[A-Za-z_]\w*\}?", value.strip()):
        shown = shlex.quote(res.source) if not res.source.startswith("<") else "FILE"
        hint = (
            f"{value.strip()} is a placeholder a deploy script fills in: lint the manifest "
            f"as applied, e.g. envsubst < {shown or 'FILE'} | kvconfig lint -"
        )
    said = f"expected {expected}, got {value!r}"[:200]
    error: InputError = res.err(said, path, ".".join(map(str, path)), hint)
    return error


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
    listed: str = "containers"
    """The list of the pod spec the containers read are in: ``containers``, or
    ``initContainers`` for native sidecars (``restartPolicy: Always``), which run for the
    pod's life (Kubernetes "Sidecar Containers", 1.29 and later)."""

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
class Found:
    """What a container runs, for the error when no vLLM container is found."""

    name: str
    runs: str
    line: int | None = None


def resources_of(
    docs: Sequence[_yaml.Document], given: Mapping[str, str] | None = None
) -> list[Resource]:
    """The resources of the documents (a ``List``'s items each)."""
    resources: list[Resource] = []
    for doc in docs:
        if isinstance(doc.data, dict) and doc.data.get("kind") == "List":
            items = doc.data.get("items")
            for i, item in enumerate(items if isinstance(items, list) else []):
                if isinstance(item, dict) and "kind" in item:
                    resources.append(Resource(doc, ("items", i), dict(given or {})))
        elif isinstance(doc.data, dict):
            resources.append(Resource(doc, given=dict(given or {})))
    return resources


def config_maps(resources: Sequence[Resource]) -> dict[tuple[str, str], dict[str, str]]:
    """The ConfigMaps among ``resources``: (namespace or "", name) -> their string ``data``
    (a name given twice: the last, as ``kubectl apply`` leaves it)."""
    out: dict[tuple[str, str], dict[str, str]] = {}
    for res in resources:
        data = res.data
        if data.get("kind") != "ConfigMap" or data.get("apiVersion") != "v1":
            continue
        meta = data.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        items = data.get("data")
        if isinstance(name, str) and (items is None or isinstance(items, dict)):
            values = (items or {}).items()
            out[(res.namespace, name)] = {k: v for k, v in values if isinstance(v, str)}
    return out
