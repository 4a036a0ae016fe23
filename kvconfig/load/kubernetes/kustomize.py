"""A kustomization (``kind: Kustomization``, what ``kubectl apply -k`` builds) read as
kustomize builds it, for what shapes a pod.

kustomize (kubernetes-sigs/kustomize, ``api/internal/target/kusttarget.go``) gathers the
``resources`` (each a file, else a folder holding its own kustomization), then runs its
generators (``configMapGenerator``, ``kustomize_fields``) and then its transformers in the
order of ``kusttarget_configplugin.go``: ``patchesStrategicMerge``, ``patches``, the name
prefix and suffix, ``patchesJson6902``, ``replicas``, ``images``, ``replacements``.
Its default load restrictor (``LoadRestrictionsRootOnly``, ``api/krusty/options.go``)
refuses a resource or patch *file* outside the kustomization's folder
(``loadrestrictions.go``); a folder outside it is a base and is allowed. A strategic
merge patch merges maps, replaces lists, and merges the pod's lists by their merge key
(``containers`` and ``env`` by ``name`` ...); ``null`` removes a key and ``$patch:
delete`` an element (Kubernetes' strategic merge patch). Everything else a kustomization
can do that may change a pod (components, Helm charts, generators' transformers) is not
built here: bad input that says to pipe ``kubectl kustomize``.
"""

from __future__ import annotations

import copy
import os
import re
from pathlib import Path
from typing import Any

from kvconfig.errors import InputError
from kvconfig.load import yamlfile as _yaml
from kvconfig.load.kubernetes.kustomize_fields import as_list, as_map, generated, replace
from kvconfig.load.roots import inside

NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
_BUILT = frozenset({
    "apiVersion", "kind", "metadata", "resources", "bases", "patches",
    "patchesStrategicMerge", "patchesJson6902", "images", "replicas", "namePrefix",
    "nameSuffix", "namespace", "commonLabels", "labels", "commonAnnotations",
    "configMapGenerator", "secretGenerator", "generatorOptions", "buildMetadata",
    "sortOptions", "replacements",
})  # fmt: skip
_MERGE_KEYS = {
    "containers": "name", "initContainers": "name", "ephemeralContainers": "name",
    "env": "name", "volumes": "name", "volumeMounts": "mountPath", "ports": "containerPort",
    "imagePullSecrets": "name", "hostAliases": "ip", "volumeDevices": "devicePath",
    "resourceClaims": "name",
}  # fmt: skip
_HINT = "build it first: kubectl kustomize DIR | kvconfig lint -"
MAX_DEPTH = 8


def is_kustomization(data: Any) -> bool:
    return (
        isinstance(data, dict)
        and data.get("kind") == "Kustomization"
        and str(data.get("apiVersion", "")).startswith("kustomize.config.k8s.io/")
    )


def build(data: dict[str, Any], folder: Path, source: str, depth: int = 0) -> list[_yaml.Document]:
    """The resources ``kustomize build`` makes of the kustomization ``data`` in ``folder``."""
    from kvconfig.load.documents import load_documents, read_file

    def fail(message: str, key: str) -> InputError:
        return InputError(message, source=source, key=key, hint=_HINT)

    for key in data:
        if key not in _BUILT:
            raise fail(f"kvconfig does not build a kustomization's {key!r}", key)
    root = Path(os.path.realpath(folder))

    def load(name: Any, key: str) -> tuple[Path | None, str]:
        if not isinstance(name, str) or re.match(r"[a-z]+://|git@|github\.com/", name):
            raise fail(f"{name!r} is not a file or folder kvconfig can read here", key)
        path = Path(os.path.realpath(root / name))
        if not inside(path):
            raise fail(f"{name} lies outside the repository: kvconfig reads only there", key)
        if path.is_dir():
            return path, ""
        if not path.is_file():
            raise fail(f"no file or folder {name} beside the kustomization", key)
        if not path.is_relative_to(root):
            raise InputError(
                f"kustomize refuses {name}: the file is not in or below the kustomization's "
                "folder (its default load restrictor, LoadRestrictionsRootOnly)",
                source=source,
                key=key,
                hint="move the file under the kustomization's folder, or make it a base "
                "(a folder with its own kustomization.yaml)",
            )
        return None, read_file(path, str(path))

    docs: list[_yaml.Document] = []
    for name in [*as_list(data.get("resources"), "resources", "resources", fail),
                 *as_list(data.get("bases"), "bases", "bases", fail)]:  # fmt: skip
        base, text = load(name, "resources")
        if base is None:
            docs.extend(load_documents(text, str(root / name))[0])
            continue
        inner = next((base / n for n in NAMES if (base / n).is_file()), None)
        if inner is None or depth >= MAX_DEPTH:
            raise fail(f"{name} holds no kustomization kvconfig can build", "resources")
        inner_docs = load_documents(read_file(inner, str(inner)), str(inner))[0]
        docs.extend(build(inner_docs[0].data, base, str(inner), depth + 1) if inner_docs else [])
    docs = [d._replace(data=copy.deepcopy(d.data)) for d in docs]
    resources = [d.data for d in docs if isinstance(d.data, dict)]
    for made in generated(data, resources, load, fail):
        docs.append(_yaml.Document(source, made, {}))
        resources.append(made)

    def patch_text(entry: Any, key: str) -> Any:
        if isinstance(entry, str) and "\n" not in entry and not entry.lstrip().startswith("{"):
            return yaml_load(load(entry, key)[1], source)
        text = entry.get("patch") if isinstance(entry, dict) and "patch" in entry else entry
        if isinstance(entry, dict) and "path" in entry:
            return yaml_load(load(entry["path"], key)[1], source)
        return yaml_load(str(text), source)

    for entry in as_list(data.get("patchesStrategicMerge"), "patches", "patches", fail):
        for patch in _as_list(patch_text(entry, "patchesStrategicMerge")):
            _apply_sm(resources, patch, None, fail)
    for raw in as_list(data.get("patches"), "patches", "patches", fail):
        entry = as_map(raw, "a patch", "patches", fail)
        patch, target = patch_text(entry, "patches"), entry.get("target")
        if isinstance(patch, list) and all(isinstance(op, dict) and "op" in op for op in patch):
            _apply_json(resources, patch, target, fail)
        else:
            for one in _as_list(patch):
                _apply_sm(resources, one, target, fail)
    names: dict[int, set[str]] = {}  # the names a replacement's selector may still use
    for res in resources:
        meta = res.get("metadata")
        if isinstance(meta, dict) and "name" in meta:
            names[id(res)] = {str(meta["name"])}
            meta["name"] = f"{data.get('namePrefix', '')}{meta['name']}{data.get('nameSuffix', '')}"
    for raw in as_list(data.get("patchesJson6902"), "patchesJson6902", "patches", fail):
        entry = as_map(raw, "a JSON patch", "patchesJson6902", fail)
        _apply_json(
            resources, _as_list(patch_text(entry, "patchesJson6902")), entry.get("target"), fail
        )
    for raw in as_list(data.get("replicas"), "replicas", "replicas", fail):
        entry = as_map(raw, "a replicas entry", "replicas", fail)
        for res in resources:
            if res.get("metadata", {}).get("name") == entry.get("name") and "spec" in res:
                res["spec"]["replicas"] = entry.get("count")
    for raw in as_list(data.get("images"), "images", "images", fail):
        entry = as_map(raw, "an images entry", "images", fail)
        for res in resources:
            _retag(res, entry)
    replace(data, resources, names, load, fail)
    return docs


def yaml_load(text: str, source: str) -> Any:
    from kvconfig.load.documents import load_documents

    docs = load_documents(text, source)[0]
    return [d.data for d in docs] if len(docs) != 1 else docs[0].data


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _selected(res: dict[str, Any], target: dict[str, Any], fail: Any) -> bool:
    if {"labelSelector", "annotationSelector"} & target.keys():
        raise fail("kvconfig does not select patch targets by label or annotation", "patches")
    group, _, version = str(res.get("apiVersion", "")).rpartition("/")
    have = {"group": group, "version": version, "kind": res.get("kind"),
            "name": (res.get("metadata") or {}).get("name"),
            "namespace": (res.get("metadata") or {}).get("namespace") or ""}  # fmt: skip
    return all(
        re.fullmatch(str(want), str(have.get(k) or "")) is not None
        for k, want in target.items()
        if want is not None and want != ""
    )


def _apply_sm(resources: list[dict[str, Any]], patch: Any, target: Any, fail: Any) -> None:
    from kvconfig.load.documents import _NO_PODS

    if not isinstance(patch, dict):
        raise fail("a strategic merge patch must be a mapping", "patches")
    if target is not None:
        chosen = [r for r in resources if _selected(r, target, fail)]
    else:
        name = (patch.get("metadata") or {}).get("name")
        chosen = [r for r in resources if r.get("kind") == patch.get("kind")
                  and (r.get("metadata") or {}).get("name") == name]  # fmt: skip
    if not chosen and target is None and patch.get("kind") not in _NO_PODS:
        raise fail(
            f"no resource matches the strategic merge patch of {patch.get('kind')}", "patches"
        )
    body = {k: v for k, v in patch.items() if k not in ("apiVersion", "kind", "metadata")}
    for res in chosen:
        merged = _merge(res, body, "")
        res.clear()
        res.update(merged)


def _merge(base: Any, patch: Any, key: str) -> Any:
    if isinstance(patch, dict) and isinstance(base, dict):
        if patch.get("$patch") == "replace":
            return {k: v for k, v in patch.items() if k != "$patch"}
        out = dict(base)
        for k, v in patch.items():
            if k.startswith("$"):
                continue
            if v is None:
                out.pop(k, None)
            else:
                out[k] = _merge(base.get(k), v, k) if k in base else _strip(v)
        return out
    if isinstance(patch, list) and isinstance(base, list) and key in _MERGE_KEYS:
        field = _MERGE_KEYS[key]
        out_list = list(base)
        for item in patch:
            idx = next(
                (
                    i
                    for i, b in enumerate(out_list)
                    if isinstance(b, dict) and isinstance(item, dict)
                    and b.get(field) == item.get(field)
                ),
                None,
            )  # fmt: skip
            if isinstance(item, dict) and item.get("$patch") == "delete":
                if idx is not None:
                    out_list.pop(idx)
            elif idx is None:
                out_list.append(_strip(item))
            else:
                out_list[idx] = _merge(out_list[idx], item, "")
        return out_list
    return _strip(patch)


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if not k.startswith("$")}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _apply_json(resources: list[dict[str, Any]], ops: list[Any], target: Any, fail: Any) -> None:
    if not isinstance(target, dict):
        raise fail("a JSON patch needs a target", "patches")
    for res in (r for r in resources if _selected(r, target, fail)):
        for op in ops:
            kind = op.get("op") if isinstance(op, dict) else None
            if kind not in ("add", "replace", "remove"):
                raise fail(f"kvconfig does not apply the JSON patch operation {kind!r}", "patches")
            parts = [
                p.replace("~1", "/").replace("~0", "~") for p in str(op["path"]).split("/")[1:]
            ]
            node: Any = res
            for part in parts[:-1]:
                node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
            last = parts[-1] if parts else ""
            if isinstance(node, list):
                at = len(node) if last == "-" else int(last)
                if kind in {"remove", "replace"}:
                    node.pop(at)
                if kind != "remove":
                    node.insert(at, copy.deepcopy(op.get("value")))
            elif kind == "remove":
                node.pop(last, None)
            else:
                node[last] = copy.deepcopy(op.get("value"))


def _retag(node: Any, entry: dict[str, Any]) -> None:
    """kustomize's ``images``: an ``image`` of a container whose name is ``entry.name``
    takes ``newName``, ``newTag`` or ``digest``."""
    if isinstance(node, list):
        for item in node:
            _retag(item, entry)
        return
    if not isinstance(node, dict):
        return
    image = node.get("image")
    if isinstance(image, str) and ("name" in node or "imagePullPolicy" in node):
        name, at, digest = image.partition("@")
        m = re.match(r"(.*?)(?::([^:/]+))?$", name)
        assert m is not None
        if m.group(1) == entry.get("name"):
            new = entry.get("newName") or m.group(1)
            if entry.get("digest"):
                node["image"] = f"{new}@{entry['digest']}"
            elif entry.get("newTag"):
                node["image"] = f"{new}:{entry['newTag']}"
            else:
                tag = f":{m.group(2)}" if m.group(2) else ""
                node["image"] = f"{new}{tag}{at}{digest}"
    for value in node.values():
        _retag(value, entry)
