"""kvconfig's vocabulary: what a backend, a deployment, a group and a plan are.

Names load on first use, so ``import schemas.sizes`` stays free of pydantic.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kvconfig.schemas.catalog import BackendEntry, Catalog, Conditions, SizeRule
    from kvconfig.schemas.deployment import (
        AttentionSettings,
        CustomBackend,
        Deployment,
        GroupSettings,
        LayerSet,
    )
    from kvconfig.schemas.plan import (
        BackendVote,
        Components,
        Finding,
        GroupPlan,
        LayersByRole,
        Plan,
        PlatformInfo,
    )
    from kvconfig.schemas.sizes import KernelSize, MultipleOf

_WHERE = {
    "BackendEntry": "catalog",
    "Catalog": "catalog",
    "Conditions": "catalog",
    "SizeRule": "catalog",
    "AttentionSettings": "deployment",
    "CustomBackend": "deployment",
    "Deployment": "deployment",
    "GroupSettings": "deployment",
    "LayerSet": "deployment",
    "BackendVote": "plan",
    "Components": "plan",
    "Finding": "plan",
    "GroupPlan": "plan",
    "LayersByRole": "plan",
    "Plan": "plan",
    "PlatformInfo": "plan",
    "KernelSize": "sizes",
    "MultipleOf": "sizes",
}

__all__ = [
    "AttentionSettings",
    "BackendEntry",
    "BackendVote",
    "Catalog",
    "Components",
    "Conditions",
    "CustomBackend",
    "Deployment",
    "Finding",
    "GroupPlan",
    "GroupSettings",
    "KernelSize",
    "LayerSet",
    "LayersByRole",
    "MultipleOf",
    "Plan",
    "PlatformInfo",
    "SizeRule",
]


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"kvconfig.schemas.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'kvconfig.schemas' has no attribute {name!r}")
