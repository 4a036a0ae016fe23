"""KServe ``InferenceService`` (``serving.kserve.io/v1beta1``) on KServe's LLM runtimes.

A predictor ``model`` of the ``vLLM`` format runs ``kserve-vllmserver`` (``VLLM_RUNTIME``).

A predictor ``model`` whose ``modelFormat`` is ``huggingface`` (and whose ``runtime`` is
unset or KServe's own ``kserve-huggingfaceserver``, the runtime that format auto-selects:
``config/runtimes/kserve-huggingfaceserver.yaml``) runs one container, ``kserve-container``,
with ``python -m huggingfaceserver --model_name=<name>`` and the predictor's ``args`` after
the runtime's (``MergeRuntimeContainers``). The server (``python/huggingfaceserver/
huggingfaceserver/__main__.py``) takes the vLLM backend unless ``--backend`` names another
one (its GPU image bundles vLLM) and then hands vLLM its own parser's result
(``AsyncEngineArgs.from_cli_args``): the model is ``--model_id``, else ``--model_dir``
(``/mnt/models``, where KServe's storage initializer puts ``storageUri``); the server's
``--max_length``/``--max_model_len``, ``--model_revision``, ``--tokenizer_revision`` and
``--trust_remote_code`` are vLLM's ``max_model_len``, ``revision``, ``tokenizer_revision``
and ``trust_remote_code``; the options of KServe's model server (``kserve/model_server.py``)
and the server's tokenizer options are its own. With GPUs, the tensor-parallel size is the
count of visible devices, whatever the arguments say (``VLLMModel.start_engine``:
``tensor_parallel_size = torch.cuda.device_count()``). The replica count is fixed when
``minReplicas`` equals ``maxReplicas``; otherwise KServe's autoscaler decides it.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvconfig.load.engine_fields import mapping

if TYPE_CHECKING:
    from kvconfig.load.kubernetes.resources import Found, Resource
    from kvconfig.load.operator_engine import Engine

HF_RUNTIME = "kserve-huggingfaceserver"
"""KServe's runtime for the ``huggingface`` model format."""

VLLM_RUNTIME = "kserve-vllmserver"
"""KServe's runtime for the ``vLLM`` model format: ``python -m
vllm.entrypoints.openai.api_server --port=8080 --served-model-name=<name>
--model=/mnt/models`` and the predictor's ``args`` (``config/runtimes/kserve-vllmserver.yaml``)."""

#: The images KServe's install gives the two runtimes (``config/runtimes/kustomization.yaml``).
IMAGES = {HF_RUNTIME: "kserve/huggingfaceserver", VLLM_RUNTIME: "vllm/vllm-openai"}

MODEL_DIR = "/mnt/models"
"""Where the storage initializer puts ``storageUri``; the server's ``--model_dir`` default."""

#: The server's options that vLLM reads under another name.
RENAMED = {
    "max_length": "max-model-len",
    "max_model_len": "max-model-len",
    "model_revision": "revision",
    "tokenizer_revision": "tokenizer-revision",
    "trust_remote_code": "trust-remote-code",
}

#: The server's own options (KServe's model server and the Hugging Face server's), which
#: vLLM never sees, with whether each takes a value.
OWN = {
    **dict.fromkeys(
        (
            "http_port", "grpc_port", "workers", "max_threads", "max_asyncio_workers",
            "enable_grpc", "enable_docs_url", "enable_latency_logging", "configure_logging",
            "log_config_file", "access_log_format", "event-loop", "timeout-keep-alive",
            "model_name", "predictor_host", "protocol", "predictor_protocol",
            "predictor_use_ssl", "predictor_request_timeout_seconds",
            "grpc_max_send_message_length", "grpc_max_receive_message_length",
            "predictor_request_retries", "model_id", "model_dir", "tensor_input_names",
            "backend",
        ),
        True,
    ),
    **dict.fromkeys(
        (
            "enable_predictor_health_check", "disable_lower_case", "disable_special_tokens",
            "return_token_type_ids", "return_offsets_mapping", "return_probabilities",
            "return_raw_logits", "disable_log_requests",
        ),
        False,
    ),
}  # fmt: skip


def server_options(words: list[str]) -> tuple[dict[str, str], list[str]]:
    """(the server's own options by name, the words vLLM parses), from its arguments."""
    own: dict[str, str] = {}
    rest: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        name, eq, value = word[2:].partition("=") if word.startswith("--") else ("", "", "")
        if name in RENAMED:
            rest.append(f"--{RENAMED[name]}" + (f"={value}" if eq else ""))
        elif name in OWN:
            if OWN[name] and not eq and i + 1 < len(words):
                i += 1
                value = words[i]
            own[name] = value
        else:
            rest.append(word)
        i += 1
    return own, rest


def _runtime(model: dict[str, Any], predictor: dict[str, Any]) -> str:
    """The built-in runtime KServe runs the model with (``HF_RUNTIME`` or ``VLLM_RUNTIME``),
    else what runs instead. Runtimes are picked by the exact format name among those that
    auto-select it, or by ``runtime``; a predictor with ``workerSpec`` takes only multi-node
    runtimes (``ModelSpec.GetSupportingRuntimes``,
    ``pkg/apis/serving/v1beta1/predictor_model.go``)."""
    fmt = str(mapping(model.get("modelFormat")).get("name", ""))
    runtime = model.get("runtime")
    builtin = {"huggingface": HF_RUNTIME, "vLLM": VLLM_RUNTIME}.get(fmt)
    if "workerSpec" in predictor:
        return "a multi-node runtime (a Ray cluster started by the runtime's script)"
    if builtin is not None and runtime in (None, builtin):
        return builtin
    if runtime:
        return f"runtime {runtime}, whose container is not in the file"
    return f"the {fmt or 'unnamed'} model format, which no vLLM runtime of KServe serves"


def _replicas(predictor: dict[str, Any]) -> int | None:
    low, high = predictor.get("minReplicas", 1), predictor.get("maxReplicas")
    if isinstance(low, int) and low == high:
        return low
    return None


def engines(
    res: Resource, base: Path, found: list[Found], block_lines: frozenset[int]
) -> list[Engine]:
    """The vLLM engine of an ``InferenceService`` whose predictor runs KServe's vLLM
    runtime or its Hugging Face server with the vLLM backend; none for other runtimes."""
    from kvconfig.load.dynamo import _Shim
    from kvconfig.load.kubernetes.containers import _gpu_count, read_container
    from kvconfig.load.kubernetes.resources import Found, Pod, strings

    data = res.data
    name = str(mapping(data.get("metadata")).get("name", "unnamed"))
    predictor = mapping(mapping(data.get("spec")).get("predictor"))
    model = mapping(predictor.get("model"))
    at = ("spec", "predictor", "model")
    args = strings(model.get("args"), res, (*at, "args"), "args")
    runs = _runtime(model, predictor)
    own: dict[str, str] = {}
    if runs == VLLM_RUNTIME:
        words = ["--port=8080", f"--served-model-name={name}", f"--model={MODEL_DIR}", *args]
    elif runs == HF_RUNTIME:
        own, words = server_options([f"--model_name={name}", *args])
        if own.get("backend", "auto") not in ("auto", "vllm"):
            runs = f"the Hugging Face server with --backend={own['backend']}"
        words = ["--model", own.get("model_id") or own.get("model_dir") or MODEL_DIR, *words]
    if runs not in (VLLM_RUNTIME, HF_RUNTIME):
        found.append(Found(f"InferenceService/{name}", runs, res.line(*at)))
        return []
    container = {k: v for k, v in model.items() if k in ("env", "envFrom", "resources", "image")}
    gpus = _gpu_count(container)
    if gpus and runs == HF_RUNTIME:
        words.append(f"--tensor-parallel-size={gpus}")
    container.update(
        name="kserve-container",
        image=str(model.get("image") or IMAGES[runs]),
        command=["python3", "-m", "vllm.entrypoints.openai.api_server"],
        args=words,
    )
    pod_spec = {k: v for k, v in predictor.items() if k in ("nodeSelector", "affinity")}
    pod_spec["containers"] = [container]
    shim = _Shim(res, ("spec", "predictor"), pod_spec, at)
    replicas = _replicas(predictor)
    pod = Pod(
        shim,  # type: ignore[arg-type]
        (),
        f"InferenceService/{name}",
        parallelism={} if replicas is None else {"replicas": replicas},
        block_lines=block_lines,
    )
    uri = str(model["storageUri"]) if model.get("storageUri") and "model_id" not in own else None
    return [replace(e, model_uri=uri) for e in read_container(pod, 0, base, found)]
