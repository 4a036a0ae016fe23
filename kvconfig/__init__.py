"""kvconfig: one authoritative KV-cache kernel block-size plan for vLLM.

Public API (names load on first use, so ``kvconfig lint`` starts fast)::

    from kvconfig import load_deployment, resolve
    plan = resolve(load_deployment("serve.yaml", platform="h200"))
    [f.code for f in plan.findings]          # FindingCode values, e.g. "KV101"
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from kvconfig.api import load_deployment, resolve
    from kvconfig.codes import FindingCode, Severity
    from kvconfig.errors import (
        InputError,
        KernelBlockSizeMismatch,
        KVConfigError,
        NoCommonKernelBlockSize,
        UnsupportedArchitecture,
    )
    from kvconfig.mirror.block_table import expand_block_table

_WHERE = {
    "load_deployment": "kvconfig.api",
    "resolve": "kvconfig.api",
    "FindingCode": "kvconfig.codes",
    "Severity": "kvconfig.codes",
    "expand_block_table": "kvconfig.mirror.block_table",
    "InputError": "kvconfig.errors",
    "KernelBlockSizeMismatch": "kvconfig.errors",
    "KVConfigError": "kvconfig.errors",
    "NoCommonKernelBlockSize": "kvconfig.errors",
    "UnsupportedArchitecture": "kvconfig.errors",
}

__all__ = [
    "FindingCode",
    "InputError",
    "KVConfigError",
    "KernelBlockSizeMismatch",
    "NoCommonKernelBlockSize",
    "Severity",
    "UnsupportedArchitecture",
    "__version__",
    "expand_block_table",
    "load_deployment",
    "resolve",
]


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'kvconfig' has no attribute {name!r}")
