"""What the operator-file readers share to fill in an engine: the vLLM image and its
version, GPU labels, checked words, mappings and lists of a file."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from kvconfig.load.documents import template_error, unrendered
from kvconfig.load.operator_engine import Note

_VLLM_IMAGES = re.compile(
    r"(^|/)vllm(-project)?/vllm-openai(-rocm|-cpu|-tpu)?$|(^|/)vllm-openai$"
    # vLLM's CPU release images on its public ECR gallery (docker/Dockerfile.cpu, stage
    # vllm-openai: ENTRYPOINT ["vllm", "serve"]), as vLLM's CPU installation docs name them
    r"|(^|/)q9t5s3a7/vllm(-arm64)?-cpu-release-repo$"
)
_LMCACHE = re.compile(r"(^|/)lmcache/vllm-openai$")
"""LMCache's builds on vLLM's image, whose numbered tags are LMCache's releases
(``lmcache/vllm-openai:v0.3.13``; no vLLM release had that number), not vLLM's."""
_VERSION_TAG = re.compile(r"^v?(\d+\.\d+\.\d+)((?:\.post\d+|rc\d+|\.dev\d+)?)(?:[-_+].*)?$")


def split_image(image: str) -> tuple[str, str | None]:
    """(repository, tag or None): ``vllm/vllm-openai:v0.33.0`` gives ``vllm/vllm-openai``
    and ``v0.33.0``."""
    name = image.split("@", 1)[0]
    slash = name.rfind("/")
    colon = name.rfind(":")
    if colon > slash:
        return name[:colon], name[colon + 1 :]
    return name, None


def is_vllm_image(image: str | None) -> bool:
    """Whether ``image`` is one of vLLM's own images, whose entry point is ``vllm serve``."""
    if not image:
        return False
    repo, _ = split_image(image)
    return bool(_VLLM_IMAGES.search(repo.lower()))


_ENTRY_POINTS: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = (
    # OPEA's Gaudi image, built from HabanaAI/vllm-fork's Dockerfile.hpu
    # (GenAIComps comps/third_parties/vllm/src/build_docker_vllm.sh)
    (re.compile(r"(^|/)opea/vllm-gaudi$"), ("python3", "-m", "vllm.entrypoints.openai.api_server")),
    # OPEA's ROCm image (GenAIComps comps/third_parties/vllm/src/Dockerfile.amd_gpu): AMD's
    # rocm/vllm image whose ENTRYPOINT runs a copy of vLLM's api_server.py as a script, the
    # same module the API server's -m runs
    (re.compile(r"(^|/)opea/vllm-rocm$"), ("python3", "-m", "vllm.entrypoints.openai.api_server")),
    # OPEA's CPU images, vLLM's own docker/Dockerfile.cpu built at a vLLM release tag
    # (GenAIExamples' build instructions: opea/vllm; GenAIComps'
    # comps/third_parties/vllm/src/build_docker_vllm.sh and its tests: opea/vllm-cpu); that
    # Dockerfile's ENTRYPOINT is vllm serve (the OpenAI API server module an older release
    # may run reads the same arguments)
    (re.compile(r"(^|/)opea/vllm(-cpu)?$"), ("vllm", "serve")),
    # llm-d's Intel XPU image, built from llm-d/llm-d docker/Dockerfile.xpu (the Makefile's
    # ghcr.io/llm-d/llm-d-$(DEVICE)); its ENTRYPOINT is the API server
    (
        re.compile(r"(^|/)llm-d/llm-d-xpu(-dev)?$"),
        ("python", "-m", "vllm.entrypoints.openai.api_server"),
    ),
    # Kthena's Ascend engine image (volcano-sh/kthena docker/Dockerfile.mooncake-npu-a3, on
    # vllm-ascend with Mooncake): its ENTRYPOINT /app/entrypoint.sh ends in exec vllm serve "$@"
    # once the pod's AscendRealDevices is set
    (re.compile(r"(^|/)volcano-sh/kthena-engine$"), ("vllm", "serve")),
    # LMCache's v0 image (LMCache/lmcache-vllm docker/Dockerfile, on vllm/vllm-openai:v0.6.2):
    # ENTRYPOINT ["lmcache_vllm", "serve"], vLLM's own CLI with LMCache injected
    (re.compile(r"(^|/)lmcache/lmcache_vllm$"), ("lmcache_vllm", "serve")),
    # LMCache's demo images of vLLM with LMCache (LMCache/demo run-server.sh.template files:
    # docker run IMAGE with engine arguments only, the README then waiting for the OpenAI
    # server's Uvicorn start-up lines): vLLM's vllm-openai image target, whose ENTRYPOINT
    # is the API server
    (re.compile(r"(^|/)apostacyh/vllm$"), ("python3", "-m", "vllm.entrypoints.openai.api_server")),
    # NVIDIA ModelExpress's vLLM client image (ai-dynamo/modelexpress
    # examples/p2p_transfer_k8s/client/vllm/Dockerfile: FROM vllm/vllm-openai, no ENTRYPOINT
    # of its own), so vLLM's vllm serve, which its examples give arguments only
    (re.compile(r"(^|/)modelexpress-client$"), ("vllm", "serve")),
    # NVIDIA Dynamo's runtime images (container/templates/*_runtime.Dockerfile): the CUDA
    # images' ENTRYPOINT /opt/nvidia/nvidia_entrypoint.sh, which ends in exec "$@", so
    # the container runs its command as given
    (re.compile(r"(^|/)nvidia/ai-dynamo/(vllm|sglang|tensorrtllm)-runtime$"), ()),
)


LLM_D_SIMULATOR = re.compile(r"(^|/)llm-d-inference-sim(:|@|$)")
"""llm-d's vLLM simulator image (llm-d/llm-d-inference-sim): its entry point answers the
OpenAI API without a model or a KV cache; the chart's ``imageDefault`` runs it as is."""


def image_entry(image: str | None) -> tuple[str, ...] | None:
    """The entry point of an image known to start vLLM, which a container given only
    arguments runs them with: ``vllm serve`` for vLLM's own images, the Dockerfile's
    ``ENTRYPOINT`` for the others kvconfig knows (empty: it runs the arguments as the
    command); None for any other image."""
    if not image:
        return None
    if is_vllm_image(image):
        return ("vllm", "serve")
    repo, _ = split_image(image)
    return next((words for pattern, words in _ENTRY_POINTS if pattern.search(repo.lower())), None)


def known_versions() -> tuple[str, ...]:
    """The vLLM releases kvconfig plans for (the version registry's)."""
    from kvconfig.mirror.versions import KNOWN

    return KNOWN


def image_version(image: str | None, line: int | None = None) -> tuple[str | None, list[Note]]:
    """The vLLM version a vLLM image's tag names, and a note when kvconfig does not know it."""
    if not image or not is_vllm_image(image):
        return None, []
    repo, tag = split_image(image)
    m = _VERSION_TAG.match(tag or "")
    if m is None or _LMCACHE.search(repo.lower()):
        said = f"tag {tag!r}" if tag else "no tag (it means latest)"
        if m is not None:  # LMCache's release (v0.3.13), not vLLM's
            said += ", LMCache's release"
        return None, [
            Note(
                "vllm-version-unsaid",
                f"the image {image} has {said}, which does not say the vLLM version",
                line,
                "image",
            )
        ]
    version = m.group(1)
    if version not in known_versions():
        return m.group(1) + m.group(2), [
            Note(
                "unknown-vllm-version",
                f"the image {image} runs vLLM {m.group(1) + m.group(2)}; kvconfig has data "
                f"for vLLM {', '.join(known_versions())}",
                line,
                "image",
            )
        ]
    return version, []


def check_words(words: Sequence[str], source: str, line: int | None, key: str) -> None:
    """Refuse words that still hold Helm template actions."""
    for i, w in enumerate(words):
        found = unrendered(w)
        if found is not None:
            raise template_error(source, line or 1, found[1], f"{key}: argument {i + 1}")


def gpu_fields(
    labels: Sequence[str], line: int | None
) -> tuple[tuple[str, ...], tuple[str, ...], list[Note]]:
    """(gpu, platforms, notes) for GPU names found in a resource."""
    from kvconfig.load.gpu_labels import platform_of

    gpus: list[str] = []
    platforms: list[str] = []
    notes: list[Note] = []
    for label in labels:
        if label in gpus:
            continue
        gpus.append(label)
        name = platform_of(label)
        if name is None:
            notes.append(
                Note(
                    "unknown-gpu",
                    f"kvconfig does not know the GPU {label!r}",
                    line,
                    "gpu",
                )
            )
        elif name not in platforms:
            platforms.append(name)
    if len(platforms) > 1:
        notes.append(
            Note(
                "several-gpus",
                f"the resource accepts any of {', '.join(platforms)}: each is planned",
                line,
                "gpu",
            )
        )
    return tuple(gpus), tuple(platforms), notes


def mapping(value: Any) -> dict[str, Any]:
    """``value`` if it is a mapping, else an empty one (for optional sections)."""
    return value if isinstance(value, dict) else {}


def listing(value: Any) -> list[Any]:
    """``value`` if it is a list, else an empty one (for optional sections)."""
    return value if isinstance(value, list) else []
