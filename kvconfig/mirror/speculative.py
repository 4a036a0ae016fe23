"""What vLLM's speculative methods are, as far as the KV-cache plan is concerned.

Mirrors ``vllm/config/speculative.py`` (``SpeculativeConfig``: which methods run a draft
model, the ``*_mtp`` aliases of ``mtp``, which methods force Model Runner V1) and the
Model Runner V2 speculators of ``vllm/v1/worker/gpu/spec_decode/`` (which of them set up
their attention through ``DraftModelSpeculator.set_attn``). The method names themselves
are the release's data (``kvconfig.mirror.versions.Facts.speculative_methods``).
"""

from __future__ import annotations

from collections.abc import Collection

WITHOUT_DRAFT_MODEL = frozenset({"ngram", "ngram_gpu", "suffix"})
"""Methods that propose tokens without a draft model, so without draft layers."""

DRAFTS_WITH_ATTENTION = frozenset({"eagle", "eagle3", "mtp", "draft_model", "dflash", "dspark"})
"""Methods whose Model Runner V2 speculator votes its own kernel block sizes in
``DraftModelSpeculator.set_attn`` (and whose layers kvconfig derives)."""

HIDDEN_STATE_METHODS = frozenset({"eagle", "eagle3", "mtp", "dflash", "dspark"})
"""``SpeculativeConfig.use_eagle``: methods that draft from the target's hidden states
(their factors enter NIXL's compatibility hash, ``nixl/metadata.py``)."""

V1_ONLY = frozenset({"suffix", "custom_class"})
"""Methods ``SpeculativeConfig`` runs on Model Runner V1 only."""


def canonical(method: str | None, mtp_aliases: Collection[str]) -> str | None:
    """The method vLLM runs: every ``*_mtp`` alias (``MTPModelTypes``) is ``mtp``."""
    if method is not None and method in mtp_aliases:
        return "mtp"
    return method


def named_by_model(model: str) -> str:
    """The method of a speculative config that names a draft ``model`` and no method, as
    ``SpeculativeConfig.__post_init__`` reads the name: ``ngram``/``[ngram]`` is n-gram
    lookup, an ``eagle-`` checkpoint EAGLE, ``eagle3`` EAGLE-3, ``dflash`` and ``dspark``
    theirs, any other model a draft model."""
    low = model.lower()
    if low in ("ngram", "[ngram]"):
        return "ngram"
    for part, method in (("eagle-", "eagle"), ("eagle3", "eagle3"), ("dflash", "dflash"),
                         ("dspark", "dspark")):  # fmt: skip
        if part in low:
            return method
    return "draft_model"
