"""KubeAI's ``Model`` (``kubeai.org/v1``): the pod its controller builds for ``engine: VLLM``.

KubeAI (substratusai/kubeai, ``internal/modelcontroller/engine_vllm.go``) runs one container
``server`` with ``python3 -m vllm.entrypoints.openai.api_server`` and these arguments:
``--model=M``, ``--served-model-name=<metadata.name>``, ``--load-format=runai_streamer``
for an ``s3://`` URL, then ``spec.args``, then ``--enable-lora`` when ``spec.adapters`` is
set (with ``VLLM_ALLOW_RUNTIME_LORA_UPDATING=True``); its environment is ``spec.env`` in
key order. ``M`` is the URL without its scheme (``hf://org/model`` gives ``org/model``),
the URL itself for ``s3://``, ``/model`` for ``pvc://`` (the claim mounted there), and
``/models/<name>-<uid>`` (the Model's UID: known once the API server stores it) with a
``cacheProfile`` (``internal/modelcontroller/cache.go``, ``modelCacheDir``).

``spec.resourceProfile`` is ``NAME:N``: the system config's profile ``NAME`` with its
requests and limits multiplied by ``N`` (``model_controller.go``, ``getModelConfig``). The
profiles of KubeAI's chart (``charts/kubeai/values.yaml``) are named for their GPU
(``nvidia-gpu-h100``, ``amd-gpu-mi300x``, ``google-tpu-v5e-2x2``) with one device each; the
image is ``spec.image``, else the chart's image for the profile's ``imageName``
(``modelServers.VLLM.images``), the one the default install runs. The replicas are
``spec.replicas``, else ``minReplicas`` (0 when unset: the pods start on the first
request), at most ``maxReplicas`` (``model_controller.go``, replica bounds).
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvconfig.load.engine_fields import mapping
from kvconfig.load.models import KUBEAI_UID_VAR as UID_VAR
from kvconfig.load.models import KUBEAI_URL as _URL

if TYPE_CHECKING:
    from kvconfig.load.kubernetes.resources import Found, Resource
    from kvconfig.load.operator_engine import Engine

#: ``modelServers.VLLM.images`` of KubeAI's chart, by the profile's ``imageName``.
CHART_IMAGES = {
    "default": "vllm/vllm-openai:v0.8.3",
    "nvidia-gpu": "vllm/vllm-openai:v0.8.3",
    "cpu": "substratusai/vllm:v0.6.3.post1-cpu",
    "google-tpu": "substratusai/vllm:v0.6.4.post1-tpu",
    "gh200": "substratusai/vllm-gh200:v0.8.3",
    "amd-gpu": "substratusai/vllm-rocm:nightly_main_20250120",
}

#: The chart's profile families: (profile name pattern, its imageName, its device resource).
PROFILES = (
    (re.compile(r"^nvidia-gpu-gh200$"), "gh200", "nvidia.com/gpu"),
    (re.compile(r"^nvidia-gpu-(.+)$"), "nvidia-gpu", "nvidia.com/gpu"),
    (re.compile(r"^amd-gpu-(.+)$"), "amd-gpu", "amd.com/gpu"),
    (re.compile(r"^google-tpu-(.+)$"), "google-tpu", "google.com/tpu"),
    (re.compile(r"^cpu$"), "cpu", ""),
)


def _replicas(spec: dict[str, Any]) -> int:
    def num(v: Any) -> int | None:
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    low = num(spec.get("minReplicas")) or 0
    want = num(spec.get("replicas"))
    replicas = low if want is None or want < low else want
    high = num(spec.get("maxReplicas"))
    return min(replicas, high) if high is not None else replicas


def _model_flag(name: str, spec: dict[str, Any]) -> tuple[str, list[str]]:
    """(``--model``'s value, the words added after ``--served-model-name``)."""
    m = _URL.match(str(spec.get("url", "")))
    scheme, ref, original = (m.group(1), m.group(2), m.group(0)) if m else ("", "", "")
    flag, extra = ref, []
    if spec.get("cacheProfile"):
        flag = f"/models/{name}-$({UID_VAR})"
    elif scheme == "s3":
        flag, extra = original, ["--load-format=runai_streamer"]
    if scheme == "pvc":
        flag = "/model"
    return flag, extra


def _profile(spec: dict[str, Any]) -> tuple[str, str, str, str]:
    """(image name, device resource, device count, the GPU the profile names)."""
    name, _, count = str(spec.get("resourceProfile", "")).partition(":")
    for pattern, image_name, device in PROFILES:
        m = pattern.match(name)
        if m is not None:
            gpu = m.group(1) if m.groups() else ("GH200" if image_name == "gh200" else "")
            return image_name, device, count, gpu
    return "default", "", count, ""


def _check(res: Resource, spec: dict[str, Any]) -> None:
    """What KubeAI's controller refuses before it builds a pod: a URL that is not
    ``SCHEME://REF`` (``parseModelURL``), a resource profile that is not ``NAME:N``
    (``getModelConfig``)."""
    url = spec.get("url")
    if not isinstance(url, str) or _URL.match(url) is None:
        raise res.err(
            f"expected SCHEME://REF, got {url!r}: KubeAI's controller refuses it",
            ("spec", "url"),
            "url",
            "write the model's URL, e.g. url: hf://Qwen/Qwen3-8B",
        )
    profile = spec.get("resourceProfile")
    name, _, count = str(profile).partition(":")
    if not isinstance(profile, str) or not name or not count.isdigit():
        raise res.err(
            f"expected NAME:N, got {profile!r}: KubeAI's controller refuses it",
            ("spec", "resourceProfile"),
            "resourceProfile",
            "write the profile and its multiple, e.g. resourceProfile: nvidia-gpu-l4:1",
        )


def engines(
    res: Resource, base: Path, found: list[Found], block_lines: frozenset[int]
) -> list[Engine]:
    """The engine of a KubeAI ``Model`` served by vLLM (none for its other engines)."""
    from kvconfig.load.dynamo import _Shim
    from kvconfig.load.kubernetes.containers import read_container
    from kvconfig.load.kubernetes.resources import Pod, strings

    data = res.data
    name = str(mapping(data.get("metadata")).get("name", "unnamed"))
    spec = mapping(data.get("spec"))
    if spec.get("engine") != "VLLM":
        return []
    _check(res, spec)
    flag, extra = _model_flag(name, spec)
    args = [f"--model={flag}", f"--served-model-name={name}", *extra]
    args += strings(spec.get("args"), res, ("spec", "args"), "args")
    env: list[dict[str, Any]] = []
    if spec.get("adapters") is not None:
        args.append("--enable-lora")
        env.append({"name": "VLLM_ALLOW_RUNTIME_LORA_UPDATING", "value": "True"})
    variables = mapping(spec.get("env"))
    env += [{"name": str(k), "value": str(variables[k])} for k in sorted(variables)]
    if spec.get("cacheProfile"):
        env.insert(0, {"name": UID_VAR, "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}})
    image_name, device, count, gpu = _profile(spec)
    image = spec.get("image") or CHART_IMAGES.get(image_name, CHART_IMAGES["default"])
    container: dict[str, Any] = {
        "name": "server",
        "image": str(image),
        "command": ["python3", "-m", "vllm.entrypoints.openai.api_server"],
        "args": args,
        "env": env,
    }
    if device:
        container["resources"] = {"limits": {device: count}}
    shim = _Shim(res, ("spec",), {"containers": [container]}, ("spec",))
    pod = Pod(
        shim,  # type: ignore[arg-type]
        (),
        f"Model/{name}",
        extra_gpu=[gpu] if gpu and device != "google.com/tpu" else [],
        parallelism={"replicas": _replicas(spec)},
        block_lines=block_lines,
    )
    url = str(spec.get("url", "")) or None
    return [replace(e, model_uri=url) for e in read_container(pod, 0, base, found)]
