"""llm-d's dual pods: a requester pod template whose annotation
``dual-pod.llm-d.ai/server-patch`` holds the patch the dual-pod controller applies to it to
make the server-running pod (llm-d-incubation/llm-d-fast-model-actuation, its dual-pods
controller; llm-d-modelservice's ``decode-requester-replicaset.yaml`` writes it). The vLLM
server is in that patched pod, not in the requester's own containers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvconfig.load import yamlfile as _yaml
from kvconfig.load.engine_fields import listing
from kvconfig.load.kubernetes.resources import Resource

SERVER_PATCH = "dual-pod.llm-d.ai/server-patch"

#: llm-d's routing sidecar (an init container of the pod): it fronts the decode vLLM server
#: and hands each request's prefill to a prefill pod (llm-d/llm-d-inference-scheduler
#: ``cmd/pd-sidecar``, formerly llm-d/llm-d-routing-sidecar).
_SIDECARS = ("llm-d-routing-sidecar", "llm-d-router-disagg-sidecar", "pd-sidecar")


def server_pod(res: Resource, path: tuple[str | int, ...]) -> Resource | None:
    """The server-running pod the dual-pod controller makes of the pod spec at ``path``, as
    a resource whose ``spec`` is that pod's spec (lines: the patch's, inside the
    annotation), or None when the template carries no server patch."""
    template: Any = res.data
    for p in path[:-1]:
        template = template[p]
    meta = template.get("metadata") if isinstance(template, dict) else None
    notes = meta.get("annotations") if isinstance(meta, dict) else None
    text = notes.get(SERVER_PATCH) if isinstance(notes, dict) else None
    if not isinstance(text, str):
        return None
    at = res.line(*path[:-1], "metadata", "annotations", SERVER_PATCH) or 1
    patch = _yaml.parse(text, res.source)
    patch_spec = patch.data.get("spec") if isinstance(patch.data, dict) else None
    own = template.get("spec")
    spec, moved = _merge_pod(own if isinstance(own, dict) else {}, patch_spec)
    lines: dict[tuple[str | int, ...], int] = {(): at, ("spec",): at}
    for key, line in patch.lines.items():
        if key[:1] != ("spec",):
            continue
        where = key
        if key[1:2] == ("containers",) and len(key) > 2 and isinstance(key[2], int):
            where = ("spec", "containers", moved.get(key[2], key[2]), *key[3:])
        lines[where] = at + line  # the block scalar starts on the line after the key
    return Resource(_yaml.Document(res.source, {"spec": spec}, lines), given=res.given)


def _merge_pod(own: Mapping[str, Any], patch: Any) -> tuple[dict[str, Any], dict[int, int]]:
    """A strategic merge of ``patch`` into the pod spec ``own``: containers and init
    containers merge by name (a new name is added), mappings merge, the rest is replaced.
    Also the index each patch container has in the merged list."""
    spec = dict(own)
    moved: dict[int, int] = {}
    if not isinstance(patch, dict):
        return spec, moved
    for key, value in patch.items():
        if key in ("containers", "initContainers") and isinstance(value, list):
            merged = [dict(c) if isinstance(c, dict) else c for c in listing(spec.get(key))]
            names = [c.get("name") if isinstance(c, dict) else None for c in merged]
            for i, c in enumerate(value):
                if not isinstance(c, dict):
                    continue
                j = names.index(c.get("name")) if c.get("name") in names else len(merged)
                if j == len(merged):
                    merged.append({})
                    names.append(c.get("name"))
                merged[j] = {**merged[j], **c}
                if key == "containers":
                    moved[i] = j
            spec[key] = merged
        elif isinstance(value, dict) and isinstance(spec.get(key), dict):
            spec[key] = {**spec[key], **value}
        else:
            spec[key] = value
    return spec, moved


def has_routing_sidecar(spec: Mapping[str, Any]) -> bool:
    """Whether the pod runs llm-d's routing sidecar, which only the decode pods of llm-d's
    prefill/decode disaggregation run."""
    for key in ("initContainers", "containers"):
        containers = spec.get(key)
        for c in containers if isinstance(containers, list) else []:
            image = str(c.get("image", "")) if isinstance(c, dict) else ""
            if any(s in image for s in _SIDECARS):
                return True
    return False
