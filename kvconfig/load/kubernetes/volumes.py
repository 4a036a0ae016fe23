"""The files a container sees through its pod's ConfigMap volumes, when the input creates
the ConfigMap: a launch script mounted from one (``./prefill.sh``, ``bash /scripts/run.sh``)
is read as the container's shell reads it (``kvconfig.load.shell``, ``held``).

As the kubelet writes them (Kubernetes "ConfigMaps" and "Volumes" docs, the ``configMap``
volume source): every key of ``data`` is a file named by the key, or only the ``items``
listed, each at its ``path``; the mode is the item's ``mode``, else the volume's
``defaultMode`` (0644 when unset). A ``volumeMount`` puts the volume at ``mountPath``, or,
with ``subPath``, the one entry at that path of the volume there. A ConfigMap the input
does not create (the cluster's) or a key it lacks gives no file.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any

from kvconfig.load.engine_fields import mapping
from kvconfig.load.kubernetes.env import config_map

_DEFAULT_MODE = 0o644


def held_files(
    res: Any, spec: Mapping[str, Any], container: Mapping[str, Any]
) -> dict[str, tuple[str, bool]]:
    """The container's files from ConfigMaps of the input: absolute path -> (text,
    executable)."""
    if not getattr(res, "config_maps", None):
        return {}
    volumes: dict[str, dict[str, tuple[str, int]]] = {}
    listed = spec.get("volumes")
    for raw in listed if isinstance(listed, list) else []:
        volume = mapping(raw)
        source = mapping(volume.get("configMap"))
        name = source.get("name")
        data = config_map(res, name) if isinstance(name, str) else None
        if data is None or not isinstance(volume.get("name"), str):
            continue
        default = _mode(source.get("defaultMode"), _DEFAULT_MODE)
        items = source.get("items")  # a list, else every key
        entries: dict[str, tuple[str, int]] = {}
        if isinstance(items, list):
            for listed_item in items:
                item = mapping(listed_item)
                key, path = item.get("key"), item.get("path")
                if isinstance(key, str) and isinstance(path, str) and key in data:
                    entries[posixpath.normpath(path)] = (
                        data[key],
                        _mode(item.get("mode"), default),
                    )
        else:
            entries = {key: (text, default) for key, text in data.items()}
        volumes[volume["name"]] = entries
    out: dict[str, tuple[str, bool]] = {}
    mounts = container.get("volumeMounts")
    for raw_mount in mounts if isinstance(mounts, list) else []:
        mount = mapping(raw_mount)
        entries_ = volumes.get(str(mount.get("name")))
        at = mount.get("mountPath")
        if entries_ is None or not isinstance(at, str) or not at.startswith("/"):
            continue
        sub = mount.get("subPath")
        for path, (text, mode) in entries_.items():
            if isinstance(sub, str) and sub:
                if path == posixpath.normpath(sub):
                    target = at
                elif path.startswith(posixpath.normpath(sub) + "/"):
                    target = posixpath.join(at, path[len(posixpath.normpath(sub)) + 1 :])
                else:
                    continue
            else:
                target = posixpath.join(at, path)
            out[posixpath.normpath(target)] = (text, bool(mode & 0o111))
    return out


def _mode(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default
