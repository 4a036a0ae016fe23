"""The hooks' logger: a child of vLLM's ``vllm`` logger, so its lines appear in vLLM's log."""

from __future__ import annotations

import logging

logger = logging.getLogger("vllm.kvconfig")
