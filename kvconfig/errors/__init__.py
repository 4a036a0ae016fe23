"""Every error kvconfig raises. All derive from ``KVConfigError`` and survive pickling,
because vLLM raises them in worker processes and re-raises them elsewhere.

Public (``kvconfig.__all__``): ``KVConfigError``, ``InputError`` (bad input, one line),
``UnsupportedArchitecture`` (a model kvconfig cannot derive), ``RunTimeValue`` (an option
that changes the plan only known at run time), ``NoCommonKernelBlockSize``
and ``KernelBlockSizeMismatch`` (raised by the vLLM hooks). The others mirror where
vLLM fails at start-up; the resolver turns them into findings, the loaders into
``InputError``, so they never reach a caller of the API.
"""

from __future__ import annotations

from kvconfig.errors.hooks import (
    ConnectorBlockSizeMismatch,
    ConnectorRefusal,
    HandshakeChecked,
    HandshakeRefused,
    HooksFailed,
)
from kvconfig.errors.plan import (
    AlignedBlockSizeUnsupported,
    AnyVariable,
    CannotTell,
    DeploymentError,
    DuplicateKey,
    GroupingError,
    InputError,
    KernelBlockSizeMismatch,
    KVConfigError,
    MachineryError,
    ModelUnavailable,
    NoCommonBlockSize,
    NoCommonKernelBlockSize,
    NoEngine,
    NotCliTemplate,
    ProgramUnread,
    RunTimeValue,
    ScriptJumps,
    ScriptStops,
    UnsupportedArchitecture,
    describe,
)

__all__ = [
    "AlignedBlockSizeUnsupported",
    "AnyVariable",
    "CannotTell",
    "ConnectorBlockSizeMismatch",
    "ConnectorRefusal",
    "DeploymentError",
    "DuplicateKey",
    "GroupingError",
    "HandshakeChecked",
    "HandshakeRefused",
    "HooksFailed",
    "InputError",
    "KVConfigError",
    "KernelBlockSizeMismatch",
    "MachineryError",
    "ModelUnavailable",
    "NoCommonBlockSize",
    "NoCommonKernelBlockSize",
    "NoEngine",
    "NotCliTemplate",
    "ProgramUnread",
    "RunTimeValue",
    "ScriptJumps",
    "ScriptStops",
    "UnsupportedArchitecture",
    "describe",
]
