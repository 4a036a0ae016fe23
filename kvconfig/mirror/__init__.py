"""Thin mirrors of vLLM's own functions, one module per function family; no kvconfig policy."""
