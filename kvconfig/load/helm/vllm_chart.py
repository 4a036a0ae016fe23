"""vLLM's own Helm chart (vllm-project/vllm ``examples/online_serving/chart-helm``, now
``examples/deployment/chart-helm``): its values, read as ``templates/deployment.yaml``
renders them.

One Deployment, ``replicaCount`` pods (an enabled ``autoscaling`` adds an HPA that moves
the count from there). Its container ``vllm`` runs image ``image.repository:image.tag``
with ``image.command`` as its whole command (the chart writes no ``args``; the schema,
``values.schema.json``, requires ``image.command``), ``image.env`` as its environment and
``envFrom`` the release's ConfigMap and Secret (``configs``, ``secrets``) and
``externalConfigs``. ``chart.resources`` (``templates/_helpers.tpl``) requests
``nvidia.com/gpu`` only when both ``resources.requests`` and ``resources.limits`` give
more than 0 (Go's ``int``), and then the pod gets a node affinity on
``nvidia.com/gpu.product`` in ``gpuModels``. The model download (``extraInit``) runs in an
init container and a Job from an S3 bucket named in the release's Secret: the model is the
path ``image.command`` names, filled at run time.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kvconfig.load import yamlfile as _yaml
from kvconfig.load.engine_fields import mapping
from kvconfig.load.helm.values import _go, _truthy, _Values, _ValuesShim, go_int
from kvconfig.load.operator_engine import Engine

_GPU = "nvidia.com/gpu"


def vllm_chart(
    doc: _yaml.Document, base: Path, given: Mapping[str, str] | None = None
) -> list[Engine]:
    """The engine of the chart's one Deployment."""
    from kvconfig.load.kubernetes.containers import read_container
    from kvconfig.load.kubernetes.resources import Found, Pod

    values = _Values(doc)
    data = doc.data
    image = data["image"]
    for required in ("repository", "tag"):
        if not _truthy(image.get(required)):
            raise values.err(
                "must be defined: the chart's template stops (required)",
                ("image",),
                f"image.{required}",
                f"set image.{required}",
            )
    command = [_go(w) for w in image["command"]]
    container: dict[str, Any] = {
        "name": "vllm",
        "image": f"{_go(image['repository'])}:{_go(image['tag'])}",
        "command": command,
        "env": image.get("env") if _truthy(image.get("env")) else [],
    }
    env_from: list[dict[str, Any]] = []
    if _truthy(data.get("configs")):
        env_from.append({"configMapRef": {"name": "RELEASE-configs"}})
    if _truthy(data.get("secrets")):
        env_from.append({"secretRef": {"name": "RELEASE-secrets"}})
    external = data.get("externalConfigs")
    if isinstance(external, list):
        env_from += [e for e in external if isinstance(e, dict)]
    if env_from:
        container["envFrom"] = env_from
    pod_spec: dict[str, Any] = {"containers": [container]}
    requests = mapping(mapping(data.get("resources")).get("requests"))
    limits = mapping(mapping(data.get("resources")).get("limits"))
    gpus = 0
    if go_int(requests.get(_GPU)) > 0 and go_int(limits.get(_GPU)) > 0:
        gpus = go_int(limits.get(_GPU))
        container["resources"] = {"limits": {_GPU: limits[_GPU]}}
        models = data.get("gpuModels")
        term: dict[str, Any] = {"key": "nvidia.com/gpu.product", "operator": "In"}
        if _truthy(models):
            term["values"] = models
        pod_spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [term]}]
                }
            }
        }
    if isinstance(data.get("nodeSelector"), dict):
        pod_spec["nodeSelector"] = data["nodeSelector"]
    parallelism: dict[str, int] = {}
    if gpus:
        parallelism["gpus"] = gpus
    replicas = data.get("replicaCount")
    if isinstance(replicas, int) and not isinstance(replicas, bool):
        parallelism["replicas"] = replicas
    shim = _ValuesShim(doc, ("image", "command"), pod_spec, given)
    pod = Pod(shim, (), "chart/vllm", parallelism=parallelism)  # type: ignore[arg-type]
    found: list[Found] = []
    return read_container(pod, 0, base, found)
