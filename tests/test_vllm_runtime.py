"""production-stack's operator resource ``VLLMRuntime``, read as the Deployment its
controller builds (``operator/internal/controller/vllmruntime_controller.go``)."""

from __future__ import annotations

import pytest
import yaml

from kvconfig.load.engines import engines_in
from kvconfig.load.reading import reading_of

RUNTIME = """
apiVersion: production-stack.vllm.ai/v1alpha1
kind: VLLMRuntime
metadata: {name: r}
spec:
  model: {modelURL: Qwen/Qwen3-8B, dtype: bfloat16, maxModelLen: 8192}
  vllmConfig:
    enablePrefixCaching: true
    tensorParallelSize: 2
    port: 8000
    extraArgs: ["--block-size", "32"]
    env: [{name: VLLM_ATTENTION_BACKEND, value: FLASHINFER}]
  lmCacheConfig: {enabled: true}
  deploymentConfig:
    replicas: 3
    resources: {gpu: "2"}
    image: {registry: docker.io, name: "vllm/vllm-openai:v0.10.1"}
    nodeSelectorTerms:
    - matchExpressions:
      - {key: nvidia.com/gpu.product, operator: In, values: [NVIDIA-H100-80GB-HBM3]}
"""


def test_the_controllers_arguments() -> None:
    (engine,) = engines_in(RUNTIME, "<runtime>")
    assert engine.argv == (
        "Qwen/Qwen3-8B", "--host", "0.0.0.0", "--port", "8000",
        "--no-enable-chunked-prefill", "--enable-prefix-caching", "--max-model-len", "8192",
        "--dtype", "bfloat16", "--tensor-parallel-size", "2", "--block-size", "32",
        "--kv-transfer-config", '{"kv_connector":"LMCacheConnector","kv_role":"kv_both"}',
    )  # fmt: skip
    assert engine.env == {"VLLM_USE_V1": "0", "VLLM_ATTENTION_BACKEND": "FLASHINFER"}
    assert engine.image == "docker.io/vllm/vllm-openai:v0.10.1"
    assert engine.vllm_version == "0.10.1"
    assert engine.platforms == ("H100",)
    r = reading_of(engine)
    assert (r.replicas, r.tensor, r.block_size, r.connector) == (3, 2, 32, "LMCacheConnector")


ROUTER = """
apiVersion: production-stack.vllm.ai/v1alpha1
kind: VLLMRouter
metadata: {name: router}
spec:
  serviceDiscovery: k8s
  routingLogic: %s
  extraArgs: %s
"""


@pytest.mark.parametrize(
    ("logic", "extra", "kvaware"),
    [
        ("kvaware", "[]", True),
        ("roundrobin", "[]", False),
        ("roundrobin", "[--routing-logic, kvaware]", True),  # argparse keeps the last
        ("kvaware", "['--routing-logic=session']", False),
    ],
)
def test_the_operators_router(logic: str, extra: str, kvaware: bool) -> None:
    """A ``VLLMRouter`` passes ``--routing-logic`` then its ``extraArgs`` to the router
    (``vllmrouter_controller.go``): kvaware routing is read, with no block size."""
    from kvconfig.load.routers import routers_of

    got = routers_of([yaml.safe_load(ROUTER % (logic, extra))])
    want = [("production-stack", "VLLMRouter/router", None)] if kvaware else []
    assert [(r.kind, r.name, r.block_size) for r in got] == want


ROUTER_POD = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: router}
spec:
  template:
    spec:
      containers:
      - name: app
        image: lmcache/lmstack-router:latest
        command: [/bin/bash, -c]
        args:
        - |
          python -m vllm_router.app --port=8000 \\
            --service-discovery=k8s --routing-logic=%s
"""


@pytest.mark.parametrize(("logic", "kvaware"), [("kvaware", True), ("prefixaware", False)])
def test_a_router_container(logic: str, kvaware: bool) -> None:
    """The router started by a container's command (``python -m vllm_router.app``)."""
    from kvconfig.load.routers import routers_of

    got = routers_of([yaml.safe_load(ROUTER_POD % logic)])
    assert [(r.kind, r.name) for r in got] == ([("production-stack", "container/app")] * kvaware)


@pytest.mark.parametrize(
    ("router", "kvaware"),
    [
        ({"routingLogic": "kvaware"}, True),
        ({"routingLogic": "kvaware", "enableRouter": False}, False),  # no router rendered
        ({"routingLogic": "roundrobin", "extraArgs": ["--routing-logic", "kvaware"]}, True),
        ({"routingLogic": "kvaware", "extraArgs": ["--routing-logic=prefixaware"]}, False),
    ],
)
def test_the_charts_router(router: dict[str, object], kvaware: bool) -> None:
    """The chart renders the router when ``routerSpec.enableRouter`` (default true) and
    passes ``--routing-logic`` then ``routerSpec.extraArgs`` (the last one counts)."""
    from kvconfig.load.routers import routers_of

    got = routers_of([{"routerSpec": router}])
    assert [r.kind for r in got] == ["production-stack"] * kvaware


@pytest.mark.parametrize(
    ("drop", "key"),
    [
        (("deploymentConfig",), "spec.deploymentConfig"),
        (("vllmConfig",), "spec.vllmConfig"),
        (("deploymentConfig", "image"), "spec.deploymentConfig.image"),
        (("model", "modelURL"), "spec.model.modelURL"),
    ],
)
def test_a_runtime_without_a_required_field_is_refused(drop: tuple[str, ...], key: str) -> None:
    """The CRD requires these fields: the API server refuses the resource, so no engine
    runs; kvconfig says so in one line, naming the field."""
    from kvconfig.errors import InputError

    data = yaml.safe_load(RUNTIME)
    node = data["spec"]
    for k in drop[:-1]:
        node = node[k]
    del node[drop[-1]]
    with pytest.raises(InputError, match="CRD requires") as caught:
        engines_in(yaml.safe_dump(data), "<runtime>")
    assert caught.value.key == key
    assert "\n" not in str(caught.value)
