"""Names and values vLLM would refuse at start-up, checked the way vLLM reads them.

Shared by the loaders of serve configs, pasted commands and native files: attention
backend names (vLLM's ``AttentionBackendEnum``, from the release's catalog), the
environment variables that change the plan (``vllm/envs.py``), and how a bad value is
described in an error line.
"""

from __future__ import annotations

from collections.abc import Mapping

from kvconfig._suggest import did_you_mean
from kvconfig.errors import InputError

#: Environment variables that change the plan (others are accepted and ignored).
PLAN_ENV = (
    "VLLM_USE_V2_MODEL_RUNNER",
    "VLLM_BATCH_INVARIANT",
    "VLLM_KV_CACHE_LAYOUT",
    "VLLM_MLA_DISABLE",
    "VLLM_HAS_FLASHINFER_CUBIN",
    "VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE",
    "VLLM_ALLOW_LONG_MAX_MODEL_LEN",
    "VLLM_USE_SIMPLE_KV_OFFLOAD",
)

#: Accepted values of the plan-changing environment variables, as vLLM reads them
#: (``vllm/envs.py``): the flags go through ``int()``; the layout through
#: ``env_with_choices``. None: any integer.
ENV_CHOICES: dict[str, tuple[str, ...] | None] = {
    "VLLM_USE_V2_MODEL_RUNNER": None,
    "VLLM_BATCH_INVARIANT": None,
    "VLLM_MLA_DISABLE": None,
    "VLLM_HAS_FLASHINFER_CUBIN": None,
    "VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE": None,
    "VLLM_USE_SIMPLE_KV_OFFLOAD": None,
    "VLLM_KV_CACHE_LAYOUT": ("LBNHC", "LBHNC", "LHBNC", "NHD", "HND", "BLHNC", "BLNHC", "BHLNC"),
}

#: ``AttentionBackendEnum`` names vLLM parses that kvconfig cannot plan for, and why.
VLLM_ONLY_BACKENDS = {
    "CUSTOM": (
        "CUSTOM selects an out-of-tree backend registered by a plugin; kvconfig cannot see it",
        "describe the layers in a native kvconfig file, with the backend's sizes under 'backends'",
    ),
    "TORCH_SDPA": (
        "TORCH_SDPA serves only vision encoders in vLLM",
        "choose a decoder attention backend, e.g. FLASH_ATTN or FLASHINFER",
    ),
}


def backend_key(name: str) -> str:
    """Compare backend names the way people misspell them: ATTENTION for ATTN, any case."""
    return name.upper().replace("-", "_").replace("ATTENTION", "ATTN")


def check_backend(name: str, version: str, *, source: str, line: int | None, key: str) -> None:
    """InputError unless ``name`` is one of vLLM's ``AttentionBackendEnum`` names."""
    from kvconfig._suggest import closest
    from kvconfig.mirror.catalog import load_catalog

    names = list(load_catalog(version).registry)
    if name.upper() in names:
        return
    if name.upper() in VLLM_ONLY_BACKENDS:
        raise InputError(
            VLLM_ONLY_BACKENDS[name.upper()][0],
            source=source,
            line=line,
            key=key,
            hint=VLLM_ONLY_BACKENDS[name.upper()][1],
        )
    # vLLM shortens ATTENTION to ATTN: TRITON means TRITON_ATTN, FLASH_ATTENTION FLASH_ATTN
    short = backend_key(name).removesuffix("_ATTN") + "_ATTN"
    hit = short if short in names else closest(name, names, key=backend_key)
    raise InputError(
        f"unknown attention backend {name!r} for vLLM {version}",
        source=source,
        line=line,
        key=key,
        hint=f"did you mean {hit!r}?" if hit else "run 'kvconfig catalog' for the list",
    )


def check_env(
    env: Mapping[str, str],
    source: str,
    key: str = "--env",
    line_of: Mapping[str, int | None] | None = None,
) -> None:
    """InputError for a plan-changing variable vLLM would reject at start-up (``vllm/envs.py``).

    ``key`` names where the variable was set: ``--env``; ``env`` in a native file, where
    ``line_of`` gives each variable's line; empty for a pasted command's prefix.
    """
    for name, choices in ENV_CHOICES.items():
        value = env.get(name)
        if value is None:
            continue
        line = (line_of or {}).get(name)
        where = f"{key}.{name}" if key == "env" else key
        if choices is None:
            try:
                int(value)
            except ValueError:
                raise InputError(
                    f"{name}={value!r} is not an integer; vLLM reads it with int() and fails",
                    source=source,
                    line=line,
                    key=where,
                    hint="set it to 0 or 1",
                ) from None
        elif value not in choices:
            raise InputError(
                f"{name}={value!r} is not one of vLLM's layouts",
                source=source,
                line=line,
                key=where,
                hint=did_you_mean(value, choices, key=str) or f"use one of {', '.join(choices)}",
            )


def runner_from_env(env: Mapping[str, str], source: str) -> str:
    """``VLLM_USE_V2_MODEL_RUNNER`` as vLLM reads it (``int()``): v1 or v2."""
    value = env["VLLM_USE_V2_MODEL_RUNNER"]
    try:
        return "v2" if int(value) else "v1"
    except ValueError as err:
        raise InputError(
            f"VLLM_USE_V2_MODEL_RUNNER={value!r} is not an integer; vLLM reads it with int()",
            source=source,
            key="VLLM_USE_V2_MODEL_RUNNER",
            hint="use 0 or 1",
        ) from err
