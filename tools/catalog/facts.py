"""vLLM facts kvconfig ships as data: the ``vllm serve`` options, the nested config keys,
the KV-cache dtypes, the speculative methods, the KV-cache spec kinds, the KV-cache
layouts and their properties, and the model architectures of an installed vLLM.

Run under the vLLM to describe (``python -m tools.catalog`` calls it).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from typing import Any


def _serve_options() -> dict[str, dict[str, Any]]:
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    from kvconfig.engine.startup import serve_function

    make_arg_parser = serve_function("make_arg_parser")

    parser = make_arg_parser(FlexibleArgumentParser(prog="vllm serve"))
    options: dict[str, dict[str, Any]] = {}
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        for option in action.option_strings:
            options[option] = {
                "dest": action.dest,
                "value": action.nargs != 0,
                "choices": sorted(str(c) for c in action.choices) if action.choices else None,
            }
    return dict(sorted(options.items()))


def _fields(cls: Any) -> list[str]:
    return sorted(f.name for f in dataclasses.fields(cls))


def collect() -> dict[str, Any]:
    """Everything kvconfig needs to parse a ``vllm serve`` configuration offline."""
    options = _serve_options()
    from typing import get_args

    import vllm
    from vllm.config import AttentionConfig, SpeculativeConfig
    from vllm.config.cache import CacheDType
    from vllm.config.speculative import MTPModelTypes, SpeculativeMethod
    from vllm.model_executor.models.registry import _VLLM_MODELS
    from vllm.v1.kv_cache_interface import KVCacheSpecKind
    from vllm.v1.kv_cache_layout import KVCacheLayout

    return {
        "vllm_version": vllm.__version__,
        "serve_options": options,
        "attention_config_keys": _fields(AttentionConfig),
        "speculative_config_keys": _fields(SpeculativeConfig),
        "kv_cache_dtypes": list(get_args(CacheDType)),
        "speculative_methods": list(get_args(SpeculativeMethod)),
        "mtp_methods": list(get_args(MTPModelTypes)),
        "spec_kinds": [kind.value for kind in KVCacheSpecKind],
        "kv_cache_layouts": {
            layout.name: {"block_contiguous": bool(layout.is_block_contiguous)}
            for layout in KVCacheLayout
        },
        "architectures": sorted(_VLLM_MODELS),
    }
