"""KServe's ``spec.kvCacheOffloading``: the ``--kv-transfer-config`` the LLMInferenceService
controller gives vLLM for it (``kvTransferConfig`` in
``pkg/controller/v1alpha2/llmisvc/config_merge.go``)."""

from __future__ import annotations

import re
from typing import Any

from kvconfig.load.engine_fields import listing, mapping

_QUANTITY = re.compile(r"^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$")
_UNITS = {
    None: 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
}  # fmt: skip


def quantity_bytes(value: Any) -> int | None:
    """A Kubernetes quantity (``10Gi``, ``500M``) in bytes, or None."""
    m = _QUANTITY.match(str(value).strip())
    if m is None:
        return None
    return int(float(m.group(1)) * _UNITS[m.group(2)])


def offloading_config(kv: dict[str, Any]) -> dict[str, Any] | None:
    """The ``kv_connector_extra_config`` of the ``OffloadingConnector`` the controller
    gives for ``spec.kvCacheOffloading``, in either of its shapes: ``cpu: 10Gi`` with
    ``evictionPolicy`` beside it (the ``TieringOffloadingSpec`` always), or ``cpu:`` a
    mapping (``size``, ``evictionPolicy``, ``blockSize``) with ``fileSystem`` and
    ``objectStore`` tiers (``kvTransferConfig`` in ``config_merge.go``: the tiering spec
    only with a secondary tier). None without a CPU size."""
    cpu = kv.get("cpu")
    if not isinstance(cpu, dict):
        size = quantity_bytes(cpu)
        if size is None:
            return None
        extra: dict[str, Any] = {"spec_name": "TieringOffloadingSpec", "cpu_bytes_to_use": size}
        if kv.get("evictionPolicy"):
            extra["eviction_policy"] = kv["evictionPolicy"]
        return extra
    size = quantity_bytes(cpu.get("size"))
    if size is None:
        return None
    extra = {"cpu_bytes_to_use": size}
    if cpu.get("evictionPolicy"):
        extra["eviction_policy"] = cpu["evictionPolicy"]
    if isinstance(cpu.get("blockSize"), int):
        extra["block_size"] = cpu["blockSize"]
    tiers: list[dict[str, Any]] = []
    for fs in listing(kv.get("fileSystem")):
        if isinstance(fs, dict):
            tier = {"type": "fs", "root_dir": fs.get("path")}
            tier |= {k: fs[f] for f, k in _FS_THREADS if isinstance(fs.get(f), int)}
            tiers.append(tier)
    for store in listing(kv.get("objectStore")):
        if isinstance(store, dict):
            tiers.append(_object_tier(store))
    if tiers:
        extra |= {"spec_name": "TieringOffloadingSpec", "secondary_tiers": tiers}
    return extra


_FS_THREADS = (("readThreads", "n_read_threads"), ("writeThreads", "n_write_threads"))


def _object_tier(store: dict[str, Any]) -> dict[str, Any]:
    """An ``objectStore`` entry as the controller writes it: ``s3://endpoint/bucket/prefix``
    split into ``store_config`` (``storeConfig`` overriding) and ``prefix``."""
    from urllib.parse import urlsplit

    config: dict[str, Any] = {}
    prefix = ""
    parts = urlsplit(str(store.get("uri") or ""))
    config["endpoint"] = parts.netloc
    bucket, _, rest = parts.path.lstrip("/").partition("/")
    if bucket:
        config["bucket"] = bucket
        prefix = rest
    config |= mapping(store.get("storeConfig"))
    tier: dict[str, Any] = {"type": "obj", "store_config": config}
    if prefix:
        tier["prefix"] = prefix
    if isinstance(store.get("ioThreads"), int):
        tier["io_threads"] = store["ioThreads"]
    return tier
