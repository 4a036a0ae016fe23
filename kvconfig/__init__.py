"""kvconfig: one authoritative KV-cache kernel block-size plan for vLLM.

Public API (names load on first use, so ``kvconfig lint`` starts fast; docs/api.md)::

    import kvconfig
    runs = kvconfig.lint(["examples/qwen3-8b-eagle3-gh200-triton-128.yaml"])
    [f.code for f in runs[0].plan.findings]      # FindingCode values, e.g. "KV102"
    kvconfig.exit_code(runs)                     # 1: rejected, as the CLI exits
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from kvconfig.api import (
        Input,
        catalog,
        diff,
        exit_code,
        explain,
        export,
        json_schemas,
        lint,
        load_deployment,
        load_engines,
        plan_deployments,
        plan_fleet,
        render,
        resolve,
        typed,
    )
    from kvconfig.codes import FindingCode, Severity
    from kvconfig.errors import (
        HooksFailed,
        InputError,
        KernelBlockSizeMismatch,
        KVConfigError,
        ModelUnavailable,
        NoCommonKernelBlockSize,
        RunTimeValue,
        UnsupportedArchitecture,
    )
    from kvconfig.mirror.block_table import expand_block_table
    from kvconfig.report.outcome import Outcome

_API = (
    "Input",
    "catalog",
    "diff",
    "exit_code",
    "explain",
    "export",
    "lint",
    "load_engines",
    "load_deployment",
    "plan_deployments",
    "plan_fleet",
    "render",
    "resolve",
    "json_schemas",
    "typed",
)
_ERRORS = (
    "HooksFailed",
    "InputError",
    "KVConfigError",
    "KernelBlockSizeMismatch",
    "ModelUnavailable",
    "NoCommonKernelBlockSize",
    "RunTimeValue",
    "UnsupportedArchitecture",
)
_WHERE = {
    **dict.fromkeys(_API, "kvconfig.api"),
    **dict.fromkeys(_ERRORS, "kvconfig.errors"),
    "FindingCode": "kvconfig.codes",
    "Severity": "kvconfig.codes",
    "Outcome": "kvconfig.report.outcome",
    "expand_block_table": "kvconfig.mirror.block_table",
}

__all__ = [
    "FindingCode",
    "HooksFailed",
    "Input",
    "InputError",
    "KVConfigError",
    "KernelBlockSizeMismatch",
    "ModelUnavailable",
    "NoCommonKernelBlockSize",
    "Outcome",
    "RunTimeValue",
    "Severity",
    "UnsupportedArchitecture",
    "__version__",
    "catalog",
    "diff",
    "exit_code",
    "expand_block_table",
    "explain",
    "export",
    "json_schemas",
    "lint",
    "load_deployment",
    "load_engines",
    "plan_deployments",
    "plan_fleet",
    "render",
    "resolve",
    "typed",
]


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'kvconfig' has no attribute {name!r}")
