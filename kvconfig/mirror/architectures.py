"""Which architectures of a vLLM release kvconfig derives with the generic decoder rule,
and what that rule reads for each (``data/vllm-<version>/architectures.json``, generated
from the release's registry, ``vllm/model_executor/models/registry.py``, and its own
start-up by ``python -m tools.registry.rules``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

from kvconfig.mirror import versions


@functools.cache
def decoder_rules(version: str = versions.DEFAULT) -> Mapping[str, Mapping[str, Any]]:
    """``{architecture: rule}`` of the release (empty when it has no such file)."""
    path = versions.folder(version) / "architectures.json"
    if not path.is_file():
        return {}
    with path.open(encoding="utf-8") as f:
        doc = json.load(f)
    rules: dict[str, Mapping[str, Any]] = doc.get("decoder", {})
    return rules
