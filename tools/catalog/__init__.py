"""Regenerate kvconfig's per-version vLLM data from an installed vLLM.

``python -m tools.catalog [-o DIR]`` (or ``bash dev/run catalog``) writes
``catalog.json`` and ``facts.json`` for the installed vLLM. A developer tool: the
kvconfig package never imports it, and it is not in the wheel.
"""
