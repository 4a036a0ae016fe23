"""What vLLM Ascend's e2e harness does for every test config it starts servers from
(``kvconfig.load.ascend_nightly``, ``kvconfig.load.ascend_single``): the ``$NAME`` and
``${NAME}`` it fills from a config's ``envs`` (``MultiNodeConfig._expand_env`` and
``SingleNodeConfig._expand_values`` use the same pattern), and the environment
``RemoteOpenAIServer._start_server`` (``tests/e2e/conftest.py``) gives a server."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

VARIABLE = re.compile(r"\$(\w+)|\$\{(\w+)\}")
"""A variable the harness fills from the config's ``envs``."""


def server_env(envs: Mapping[Any, Any]) -> dict[str, str]:
    """``spawn`` workers, then the config's envs, each as ``str`` writes it."""
    return {"VLLM_WORKER_MULTIPROC_METHOD": "spawn", **{str(n): str(v) for n, v in envs.items()}}
