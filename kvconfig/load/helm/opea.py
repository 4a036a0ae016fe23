"""OPEA's vLLM chart (opea-project/GenAIInfra ``helm-charts/common/vllm``, as of commit
9200b37), read as its templates render it: its own values files, or the sections of an
OPEA application chart's values (ChatQnA, AgentQnA, ...) that configure it as a subchart.

Helm merges, for each subchart, the subchart's ``values.yaml``, the application chart's
``values.yaml`` under the subchart's key, and the user's values file under that key (the
``global`` section goes down to every subchart). The key is the dependency's ``alias``
(ChatQnA's ``Chart.yaml`` uses the vLLM chart twice, as ``vllm`` and ``vllm-guardrails``),
and a dependency runs when its ``condition`` (``vllm.enabled``) holds. When the file sits
beside its application chart (a ``Chart.yaml`` whose dependencies name ``vllm``), kvconfig
reads that ``Chart.yaml`` and ``values.yaml`` as Helm does; a values file alone (as OPEA's
examples keep them, for ``helm install CHART -f FILE``) is read with the vLLM chart's own
defaults, each ``vllm``/``vllm-*`` section running unless it says ``enabled: false``.

Each running section renders (``templates/deployment.yaml``, ``configmap.yaml``) a
Deployment ``RELEASE-KEY`` of ``replicaCount`` pods (unless ``autoscaling.enabled``:
the HPA decides) whose container runs image
``image.repository:image.tag`` with the arguments ``extraCmdArgs`` followed by ``--model
LLM_MODEL_ID --host 0.0.0.0 --port PORT --download-dir /data`` (the image's entry point
runs them: vLLM's OpenAI server; ``extraCmd.command`` replaces it), its environment from
the chart's ConfigMap (proxies, caches, the Gaudi and CPU settings that are set, ``env``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kvconfig.errors import InputError, NoEngine
from kvconfig.load import yamlfile as _yaml
from kvconfig.load.engine_fields import listing, mapping
from kvconfig.load.helm.kinds import OPEA_SET_ENV, opea_sections
from kvconfig.load.helm.values import _go, _truthy, coalesce, go_int, values_at
from kvconfig.load.operator_engine import Engine
from kvconfig.load.roots import inside

#: The vLLM chart's values.yaml: the keys its Deployment and ConfigMap read.
_DEFAULTS: dict[str, Any] = {
    "replicaCount": 1,
    "port": 2080,
    "image": {"repository": "opea/vllm", "tag": "latest"},
    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
    "extraCmdArgs": [],
    "nodeSelector": {},
    "tolerations": [],
    "affinity": {},
    "LLM_MODEL_ID": "meta-llama/Meta-Llama-3-8B-Instruct",
    "OMPI_MCA_btl_vader_single_copy_mechanism": "",
    "PT_HPU_ENABLE_LAZY_COLLECTIVES": "",
    "VLLM_CPU_KVCACHE_SPACE": "",
    "global": {"http_proxy": "", "https_proxy": "", "no_proxy": "",
               "HF_TOKEN": "insert-your-huggingface-token-here"},
}  # fmt: skip
_APP_VERSION = "0.5"
"""The chart's ``appVersion``, the image tag when ``image.tag`` is empty."""


def opea(doc: _yaml.Document, base: Path, given: Mapping[str, str] | None = None) -> list[Engine]:
    """The engines of the vLLM Deployments the values render."""
    from kvconfig.load.kubernetes import workloads

    data: dict[str, Any] = doc.data
    chart, chart_values = _application_chart(base)
    merged = coalesce(chart_values, data)
    if chart:  # as the application chart's dependencies say
        running = [key for key, condition in chart.items() if _condition(merged, condition)]
    elif opea_sections(data):  # a values file alone: each section unless disabled
        running = [key for key in opea_sections(data) if data[key].get("enabled") is not False]
    else:  # the vLLM chart's own values (helm-charts/common/vllm/gaudi-values.yaml)
        running = []
    docs: list[_yaml.Document] = []
    if not chart and not opea_sections(data):
        docs += _rendered(doc, "vllm", coalesce(_DEFAULTS, data), ())
    for name in ("global", *running):
        given = data.get(name)
        if given is not None and not isinstance(given, dict):
            raise InputError(
                "expected a mapping: Helm gives a subchart this key's values as a table, "
                "and the chart's templates read its keys",
                source=doc.source,
                line=doc.line(name),
                key=name,
                hint=f"write {name}: with the keys to set under it",
            )
    for key in running:
        values = coalesce(coalesce(_DEFAULTS, chart_values.get(key)), data.get(key))
        if not isinstance(values, dict):  # the application chart's values.yaml holds no table
            raise InputError(
                f"expected a mapping under {key} in the chart's values.yaml",
                source=str(base / "values.yaml"),
                key=key,
                hint="fix the chart's values.yaml, or lint the file away from the chart",
            )
        values["global"] = coalesce(
            coalesce(_DEFAULTS["global"], chart_values.get("global")), data.get("global")
        )
        docs += _rendered(doc, key, values, (key,))
    if not docs:
        raise NoEngine(
            "no vLLM section of the chart is enabled (vllm.enabled)",
            source=doc.source,
            line=doc.line("vllm") or 1,
            key="vllm.enabled",
            hint="set enabled: true in the vllm section to deploy vLLM",
        )
    return workloads.engines(docs, base, given=given)


def _application_chart(base: Path) -> tuple[dict[str, str], dict[str, Any]]:
    """The vLLM dependencies (key -> condition) of the ``Chart.yaml`` beside the file, and
    that chart's ``values.yaml``; empty when there is none or it uses no vLLM chart."""
    chart_file = base / "Chart.yaml"
    if not chart_file.is_file() or not inside(chart_file, base):
        return {}, {}  # none, or a link out of the allowed roots: not read
    chart = _yaml.parse(_yaml.read_text(chart_file, str(chart_file)), str(chart_file)).data
    deps = mapping(chart).get("dependencies")
    found = {
        str(d.get("alias") or "vllm"): str(d.get("condition") or "")
        for d in deps or []
        if isinstance(d, dict) and d.get("name") == "vllm"
    }
    if not found:
        return {}, {}
    values_file = base / "values.yaml"
    values: Any = {}
    if values_file.is_file() and inside(values_file, base):
        values = _yaml.parse(_yaml.read_text(values_file, str(values_file)), str(values_file))
        values = values.data
    return found, values if isinstance(values, dict) else {}


def _condition(values: Mapping[str, Any], condition: str) -> bool:
    """A dependency's ``condition``: the first path that exists decides; none: it runs
    (Helm's ``ProcessDependencyConditions``)."""
    for path in (p.strip() for p in condition.split(",") if p.strip()):
        node = values_at(values, *path.split("."))
        if isinstance(node, bool):
            return node
    return True


def _rendered(
    doc: _yaml.Document, key: str, values: dict[str, Any], at: tuple[str, ...]
) -> list[_yaml.Document]:
    """The ConfigMap and the Deployment of one use of the chart."""
    override = values.get("fullnameOverride")
    name = _go(override) if override else f"RELEASE-{_go(values.get('nameOverride') or key)}"
    image = mapping(values.get("image"))
    repository = _go(image.get("repository"))
    tag = _go(image.get("tag")) or _APP_VERSION
    glob = mapping(values.get("global"))
    env: dict[str, str] = {
        "HF_TOKEN": _go(glob.get("HUGGINGFACEHUB_API_TOKEN") or glob.get("HF_TOKEN")),
    }
    if _truthy(glob.get("HF_ENDPOINT")):
        env["HF_ENDPOINT"] = _go(glob["HF_ENDPOINT"])
    for proxy in ("http_proxy", "https_proxy", "no_proxy"):
        env[proxy] = _go(glob.get(proxy))
    if "opea/vllm-gaudi" in repository:
        env["HABANA_LOGS"] = "/tmp/habana_logs"
    env.update({
        "NUMBA_CACHE_DIR": "/tmp", "HF_HOME": "/tmp/.cache/huggingface",
        "XDG_CONFIG_HOME": "/tmp", "TORCHINDUCTOR_CACHE_DIR": "/tmp/pytorchinductor_cache",
        "OUTLINES_CACHE_DIR": "/tmp/.cache/outlines",
    })  # fmt: skip
    env.update({k: _go(values[k]) for k in OPEA_SET_ENV if _truthy(values.get(k))})
    extra = mapping(values.get("env"))
    env.update({_go(k).strip(): _go(extra[k]).strip() for k in sorted(extra, key=str)})
    env_from: list[dict[str, Any]] = [{"configMapRef": {"name": f"{name}-config"}}]
    if _truthy(glob.get("extraEnvConfig")):
        env_from.append({"configMapRef": {"name": _go(glob["extraEnvConfig"]), "optional": True}})
    args = values.get("extraCmdArgs") or []
    if not isinstance(args, list):
        raise InputError(
            "expected a list of arguments",
            source=doc.source,
            line=doc.line(*at, "extraCmdArgs"),
            key=".".join((*at, "extraCmdArgs")),
            hint='e.g. extraCmdArgs: ["--tensor-parallel-size", "2"]',
        )
    container: dict[str, Any] = {
        "name": key,
        "image": f"{repository}:{tag}",
        "envFrom": env_from,
        "args": [_go(a) for a in args] + [
            "--model", _go(values.get("LLM_MODEL_ID")), "--host", "0.0.0.0",
            "--port", _go(values.get("port")), "--download-dir", "/data",
        ],
        "resources": values.get("resources") or {},
    }  # fmt: skip
    extra_cmd = mapping(values.get("extraCmd"))
    if _truthy(extra_cmd):
        container["command"] = [_go(w) for w in listing(extra_cmd.get("command"))]
    pod: dict[str, Any] = {"containers": [container]}
    for field in ("nodeSelector", "affinity", "tolerations"):
        if _truthy(values.get(field)):
            pod[field] = values[field]
    spec: dict[str, Any] = {"template": {"spec": pod}}
    # the template writes replicas only when it is not 1, leaving 1 to Kubernetes'
    # default (and the count to the HPA that autoscaling.enabled adds): replicaCount pods
    if not _truthy(mapping(values.get("autoscaling")).get("enabled")):
        spec["replicas"] = go_int(values.get("replicaCount"))
    line = doc.line(*at) if at else 1
    lines: dict[_yaml.Path_, int] = {(): line or 1}
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{name}-config"},
        "data": env,
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": spec,
    }
    return [
        _yaml.Document(doc.source, config_map, lines),
        _yaml.Document(doc.source, deployment, lines),
    ]
