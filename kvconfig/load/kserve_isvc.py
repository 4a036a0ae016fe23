"""KServe ``InferenceService`` (``serving.kserve.io/v1beta1``) on the Hugging Face runtime.

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


def _replicas(predictor: dict[str, Any]) -> int | None:
    low, high = predictor.get("minReplicas", 1), predictor.get("maxReplicas")
    if isinstance(low, int) and low == high:
        return low
    return None


def engines(
    res: Resource, base: Path, found: list[Found], block_lines: frozenset[int]
) -> list[Engine]:
    """The vLLM engine of an ``InferenceService`` whose predictor runs KServe's Hugging
    Face server with its vLLM backend; none for other runtimes."""
    from kvconfig.load.dynamo import _Shim
    from kvconfig.load.kubernetes.containers import _gpu_count, read_container
    from kvconfig.load.kubernetes.resources import Found, Pod, strings

    data = res.data
    name = str(mapping(data.get("metadata")).get("name", "unnamed"))
    predictor = mapping(mapping(data.get("spec")).get("predictor"))
    model = mapping(predictor.get("model"))
    fmt = str(mapping(model.get("modelFormat")).get("name", ""))
    runtime = model.get("runtime")
    at = ("spec", "predictor", "model")
    if fmt.lower() != "huggingface" or runtime not in (None, HF_RUNTIME):
        what = f"runtime {runtime}" if runtime else f"the {fmt or 'unnamed'} model format"
        found.append(
            Found(
                f"InferenceService/{name}",
                f"{what} (not KServe's Hugging Face server)",
                res.line(*at),
            )
        )
        return []
    args = strings(model.get("args"), res, (*at, "args"), "args")
    own, words = server_options([f"--model_name={name}", *args])
    if own.get("backend", "auto") not in ("auto", "vllm"):
        found.append(
            Found(
                f"InferenceService/{name}",
                f"the Hugging Face server with --backend={own['backend']}",
                res.line(*at, "args"),
            )
        )
        return []
    container = {k: v for k, v in model.items() if k in ("env", "envFrom", "resources", "image")}
    gpus = _gpu_count(container)
    words = ["--model", own.get("model_id") or own.get("model_dir") or MODEL_DIR, *words]
    if gpus:
        words.append(f"--tensor-parallel-size={gpus}")
    container.update(
        name="kserve-container",
        image=str(model.get("image") or "kserve/huggingfaceserver"),
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
