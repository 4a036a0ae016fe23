"""The vLLM releases kvconfig mirrors, and where each one's data lives.

This is the one module that names a vLLM version. Everything else asks it: which
releases are known, which one a deployment plans for when it names none, and the
folder of each release's data (``data/vllm-<version>/``, beside this module):

* ``catalog.json``: every attention backend class and the kernel block sizes it
  declares (``kvconfig.mirror.catalog`` reads it);
* ``facts.json``: what kvconfig checks input against (the ``vllm serve`` options, the
  nested config keys, the KV-cache dtypes, the speculative methods, the KV-cache spec
  kinds, the KV-cache layouts and which are block-contiguous, the model architectures),
  read here.

Both files are generated from that release's installed vLLM (``python -m tools.catalog``)
and checked against it by the tests. The rules in the other ``kvconfig.mirror`` modules
(backend selection, priorities, validation, grouping, the votes) are those of the same
release: a release is only added here once they have been checked against it.

Nothing here imports pydantic, torch or vLLM.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from kvconfig.errors import InputError

KNOWN: tuple[str, ...] = ("0.30.0", "0.31.0", "0.32.0", "0.33.0")
"""The vLLM releases kvconfig plans for, oldest first. The hooks are built for these too."""

DEFAULT: str = KNOWN[-1]
"""The release a deployment plans for when it names none."""

DEMO_API_SERVER_LAST = "0.24.0"
"""The last release that ships ``vllm/entrypoints/api_server.py``, vLLM's demo API server
(``python -m vllm.entrypoints.api_server``): the PyPI wheels of 0.20.0 to 0.24.0 hold it,
those of 0.25.0 and 0.28.0 do not, nor do those of the releases kvconfig plans for."""

DATA = Path(__file__).parent / "data"
"""The per-release data folders."""


def folder(version: str) -> Path:
    """The data folder of a release (``data/vllm-<version>``); it may not exist."""
    return DATA / f"vllm-{version}"


def check(
    version: str, *, source: str = "", line: int | None = None, key: str = "--vllm-version"
) -> str:
    """``version`` if kvconfig knows it; an InputError naming the known ones otherwise."""
    if version in KNOWN:
        return version
    raise InputError(
        f"kvconfig does not plan for vLLM {version}",
        source=source,
        line=line,
        key=key,
        hint=f"known: {', '.join(KNOWN)}",
    )


_RELEASE = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?(.*)$")
_NEWEST_WORDS = ("nightly", "latest", "main", "dev", "head")
"""Names of no fixed release that mean vLLM's newest code (image tags, wheel channels)."""


CHECK = "check the deployment with --engine vllm next to the vLLM that runs it"
"""What a plan for an assumed release recommends (docs/engine.md)."""


class Release(NamedTuple):
    """The release a deployment plans with, for a release it names."""

    version: str
    """A known release: the one named, or the one assumed for it."""
    named: str
    """What the deployment (or the command line) named."""
    assumed: bool
    """Whether ``version`` stands in for a release kvconfig has no rules for."""

    def message(self) -> str:
        """The finding (KV502) that says which release's rules the plan used."""
        which = "the newest" if self.version == KNOWN[-1] else "the nearest"
        return (
            f"kvconfig has no rules for vLLM {self.named}; this plan assumes vLLM "
            f"{self.version} ({which} release it knows), whose rules may differ: {CHECK}"
        )


def _number(version: str) -> tuple[int, int, int] | None:
    m = _RELEASE.match(version)
    if m is None:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def at_or_before(named: str, last: str) -> bool | None:
    """Whether the release ``named`` is ``last`` or an older one; None when ``named`` is no
    release number (a channel, a build's tag)."""
    number, bound = _number(named.strip().lower()), _number(last)
    return None if number is None or bound is None else number <= bound


def release(
    named: str, *, source: str = "", line: int | None = None, key: str = "--vllm-version"
) -> Release:
    """The release to plan with for ``named``: itself when known; otherwise the newest
    known release for a newer one or a channel (``nightly``, ``latest``), the nearest
    older known release for one in between or older, flagged ``assumed``. An InputError
    when ``named`` is no release at all."""
    if named in KNOWN:
        return Release(named, named, False)
    text = named.strip().lower()
    number = _number(text)
    if number is None:
        if any(w in text for w in _NEWEST_WORDS):
            return Release(KNOWN[-1], named, True)
        raise InputError(
            f"{named!r} is not a vLLM release",
            source=source,
            line=line,
            key=key,
            hint=f"a release number or nightly; kvconfig knows {', '.join(KNOWN)}",
        )
    known = sorted(KNOWN, key=lambda v: _number(v) or (0, 0, 0))
    at_or_below = [v for v in known if (_number(v) or (0, 0, 0)) <= number]
    chosen = at_or_below[-1] if at_or_below else known[0]
    return Release(chosen, named, True)


class Rules(NamedTuple):
    """The rules that differ between the known releases, as flags the mirror reads.

    Everything else kvconfig mirrors was compared across the releases' code and is the
    same; what a release's installed code answers (backends present, their sizes, the
    options) is its data folder. Differences found (``vllm/v1/worker/utils.py``,
    ``vllm/platforms/interface.py``, ``vllm/platforms/cuda.py``, the backends under
    ``vllm/v1/attention/backends/``, ``vllm/entrypoints/cli/serve.py`` of each wheel):

    * ``select_common_block_size`` asks each backend for its sizes with the layer's spec
      from 0.32.0 on; 0.31.0's backends take a spec but the vote passes none, 0.30.0's
      take none (``vote_with_specs``; the catalog of each release is generated with the
      vote's own call);
    * vLLM 0.33.0 added ``FLASH_ATTN_MLA_SPARSE_FA4`` to the sparse MLA priorities on
      SM10x (``_get_backend_priorities`` of 0.30.0 to 0.32.0 is the same code), and
      0.32.0 the ``ULTRAQUANT`` backend: ``kvconfig.mirror.selection.priorities`` drops
      the names a release's registry lacks;
    * vLLM 0.33.0 moved ``make_arg_parser`` and ``validate_parsed_serve_args`` from
      ``vllm.entrypoints.launchers.cli_args`` to ``vllm.entrypoints.common.cli_args``
      (the engine mode and the generators look in both: ``SERVE_ARGUMENTS``);
    * the attention implementations' own refusals (``kvconfig.mirror.impls``) and the
      KV-cache grouping (``kvconfig.mirror.grouping``) are the same in all four for
      what kvconfig derives (0.30.0 promotes sliding windows without splitting
      decode-context-parallel layers, which kvconfig does not plan);
    * in all four, the Model Runner V2 speculator re-votes over its draft layers
      (``DraftModelSpeculator.set_attn`` calls ``init_attn_backend`` without the runner's
      ``kernel_block_sizes``).
    """

    vote_with_specs: bool
    """``select_common_block_size`` asks each backend for its sizes with its layers' spec;
    before (0.31.0 and older), without one, so every backend reads the target model's
    config (``get_current_vllm_config``): the model's head size, no value head size, the
    model's cache dtype. Each catalog is generated with its release's call."""
    backends_take_specs: bool
    """A backend's ``get_supported_kernel_block_sizes`` takes the layer's spec (0.31.0 on,
    ``vllm/v1/attention/backend.py``). 0.30.0's take nothing: a sliding-window layer that
    picks its kernel block at ``get_kv_cache_spec`` time (``_largest_kernel_block_within``,
    ``vllm/model_executor/layers/attention/attention.py``), when no vLLM config is current,
    gets the sizes of a backend that knows neither the layer nor the model."""
    packed_keeps_block: bool
    """``prepare_kernel_block_sizes`` keeps B for a group a block-outermost packed tensor
    holds (``block_stride > layer_stride``); before (0.31.0 and older), it votes as for
    any group."""
    speculator_revotes: bool
    """The Model Runner V2 speculator runs its own vote over the draft layers."""
    quantized_by_name: bool
    """``is_quantized_kv_cache`` tests the name (``fp8*``, ``nvfp4*``, ``*per_token_head``:
    ``vllm/utils/torch_utils.py``) rather than the quantization mode of the dtype
    (``vllm/v1/kv_cache_interface.py``, which also counts TurboQuant, UltraQuant and
    int8). It decides FlashAttention's head-size-256 fallback, the sparse MLA priorities
    and the FlashAttention and B12X cache checks."""
    preferred_over_backends: bool
    """Without ``--block-size``, B is ``_preferred_block_size_for_backends`` over every
    distinct attention backend; before (0.30.0), the first backend's
    ``get_preferred_block_size(16)`` alone."""
    hybrid_over_backends: bool
    """``_align_hybrid_block_size`` rounds the aligned B up to every backend's smallest
    kernel block and ``_check_aligned_block_size`` fails start-up when a backend rejects
    the aligned B; before (0.31.0 and older), only the first backend's kernel block
    counts and the aligned B goes on to the runner's vote."""
    checkpoint_grid: bool
    """With prefix caching (``mamba_cache_mode == "align"``), the hybrid alignment is
    also a multiple of the gated-delta-net prefill checkpoint grid
    (``get_mamba_prefill_checkpoint_alignment``); 0.32.0 and older do not align to it."""
    fa4_sm90_fp8: bool
    """``flash_attn_supports_fp8`` takes FA4 at head size 512 on SM90, and FlashAttention
    refuses an FP8 cache with multimodal prefix attention on SM90
    (``vllm/v1/attention/backends/fa_utils.py``, ``flash_attn.py``); 0.30.0 takes FA3
    only on SM90 and has no such refusal."""
    flashinfer_nvfp4_fa2: bool
    """FlashInfer reads a plain ``nvfp4`` cache through FA2 on SM80, SM90 and SM12x,
    refusing head size 64 and sinks there (``supports_kv_cache_dtype``,
    ``supports_combination``); before (0.31.0 and older), NVFP4 needs SM100 with TRTLLM."""
    connector_transfer_layers: bool
    """The NIXL and Mooncake workers' vote (``_sync_block_size_with_kernel``) runs over
    the transfer layers' (backend, spec) pairs, compressed caches left out
    (``get_current_attn_backends_and_specs``); before (0.31.0 and older), over every
    attention layer's backend, without a spec (``get_current_attn_backends``)."""
    spec_alignment: str
    """Who sets an attention spec's ``block_stride_alignment``: ``runner`` (0.32.0 on:
    the runners' ``customize_attention_spec``, ``vllm/v1/worker/utils.py``, gives each
    spec its backend's ``customize_spec`` and otherwise ``MultipleOf`` the largest of
    fixed kernel block sizes), ``mla`` (0.31.0: only ``MLAAttention.get_kv_cache_spec``,
    ``vllm/model_executor/layers/attention/mla_attention.py``, aligns to the state bytes
    for flat sparse caches and ``FLASHMLA_SPARSE`` with a ``*_ds_mla`` cache on SM100) or
    ``none`` (0.30.0: specs have no such field). Specs that differ only there do not
    merge, so it decides whether a drafter on another backend shares the target's
    groups."""
    sparse_mla_nope: tuple[str, ...]
    """The cache dtypes with which ``FLASHMLA_SPARSE`` takes head size 512 (rope-free
    models on SM90): none in 0.30.0 (head size 576 only), ``fp8_ds_mla`` from 0.32.0."""
    speculators_verifier_checked: bool
    """``maybe_override_with_speculators`` (``vllm/transformers_utils/config.py``) leaves a
    model that is one file alone and refuses a speculators checkpoint whose verifier is no
    Hub repository id (``validate_repo_id``) or a path on the machine (0.33.0 on;
    ``kvconfig.mirror.speculators``)."""


_NOPE_BF16 = ("auto", "bfloat16", "float16")

RULES: Mapping[str, Rules] = {
    "0.30.0": Rules(
        vote_with_specs=False,
        backends_take_specs=False,
        packed_keeps_block=False,
        speculator_revotes=True,
        quantized_by_name=True,
        preferred_over_backends=False,
        hybrid_over_backends=False,
        checkpoint_grid=False,
        fa4_sm90_fp8=False,
        flashinfer_nvfp4_fa2=False,
        connector_transfer_layers=False,
        spec_alignment="none",
        sparse_mla_nope=(),
        speculators_verifier_checked=False,
    ),
    "0.31.0": Rules(
        vote_with_specs=False,
        backends_take_specs=True,
        packed_keeps_block=False,
        speculator_revotes=True,
        quantized_by_name=True,
        preferred_over_backends=True,
        hybrid_over_backends=False,
        checkpoint_grid=False,
        fa4_sm90_fp8=True,
        flashinfer_nvfp4_fa2=False,
        connector_transfer_layers=False,
        spec_alignment="mla",
        sparse_mla_nope=_NOPE_BF16,
        speculators_verifier_checked=False,
    ),
    "0.32.0": Rules(
        vote_with_specs=True,
        backends_take_specs=True,
        packed_keeps_block=True,
        speculator_revotes=True,
        quantized_by_name=True,
        preferred_over_backends=True,
        hybrid_over_backends=True,
        checkpoint_grid=False,
        fa4_sm90_fp8=True,
        flashinfer_nvfp4_fa2=True,
        connector_transfer_layers=True,
        spec_alignment="runner",
        sparse_mla_nope=(*_NOPE_BF16, "fp8_ds_mla"),
        speculators_verifier_checked=False,
    ),
    "0.33.0": Rules(
        vote_with_specs=True,
        backends_take_specs=True,
        packed_keeps_block=True,
        speculator_revotes=True,
        quantized_by_name=False,
        preferred_over_backends=True,
        hybrid_over_backends=True,
        checkpoint_grid=True,
        fa4_sm90_fp8=True,
        flashinfer_nvfp4_fa2=True,
        connector_transfer_layers=True,
        spec_alignment="runner",
        sparse_mla_nope=(*_NOPE_BF16, "fp8_ds_mla"),
        speculators_verifier_checked=True,
    ),
}
"""The differing rules of each release compared (every release of ``KNOWN`` has a row; a
release whose rules are compared and checked against its code but whose catalog is not
generated yet may have a row without being in ``KNOWN``)."""

SERVE_ARGUMENTS: tuple[str, ...] = (
    "vllm.entrypoints.common.cli_args",
    "vllm.entrypoints.launchers.cli_args",
)
"""Where ``vllm serve`` takes its parser functions from: 0.33.0's module, then the one of
0.30.0 to 0.32.0. A release that moves them again is looked up in the sub-command itself."""


def rules(version: str) -> Rules:
    """The differing rules of a known release (InputError for an unknown one)."""
    return RULES[check(version)]


class Facts(NamedTuple):
    """What one vLLM release accepts, as its ``facts.json`` records it."""

    version: str
    serve_options: Mapping[str, Mapping[str, Any]]
    """``vllm serve`` options: ``--name`` -> ``dest``, whether it takes a value, its choices."""
    attention_config_keys: tuple[str, ...]
    """The fields of ``AttentionConfig`` (``--attention-config``)."""
    speculative_config_keys: tuple[str, ...]
    """The fields of ``SpeculativeConfig`` (``--speculative-config``)."""
    kv_cache_dtypes: tuple[str, ...]
    """``CacheDType``: the values of ``--kv-cache-dtype``."""
    speculative_methods: tuple[str, ...]
    """``SpeculativeMethod``: the values of ``speculative-config.method``."""
    mtp_methods: tuple[str, ...]
    """``MTPModelTypes``: the ``*_mtp`` method names, aliases of ``mtp``."""
    spec_kinds: tuple[str, ...]
    """``KVCacheSpecKind`` values: the keys of ``attention-config.backend_per_kind``."""
    kv_cache_layouts: Mapping[str, Mapping[str, bool]]
    """``KVCacheLayout`` (``v1/kv_cache_layout.py``): each member's name -> its properties
    (``block_contiguous``: ``is_block_contiguous``, [H, N, C] contiguous within a block)."""
    architectures: frozenset[str]
    """The model architectures vLLM's registry serves."""


@functools.cache
def facts(version: str) -> Facts:
    """The facts of a known release (InputError for an unknown one)."""
    check(version)
    with (folder(version) / "facts.json").open(encoding="utf-8") as f:
        raw: dict[str, Any] = json.load(f)
    return Facts(
        version=version,
        serve_options=raw["serve_options"],
        attention_config_keys=tuple(raw["attention_config_keys"]),
        speculative_config_keys=tuple(raw["speculative_config_keys"]),
        kv_cache_dtypes=tuple(raw["kv_cache_dtypes"]),
        speculative_methods=tuple(raw["speculative_methods"]),
        mtp_methods=tuple(raw["mtp_methods"]),
        spec_kinds=tuple(raw["spec_kinds"]),
        kv_cache_layouts=raw.get("kv_cache_layouts", {}),
        architectures=frozenset(raw["architectures"]),
    )


def catalog_file(version: str) -> Path:
    """The backend catalog of a known release (InputError for an unknown one)."""
    return folder(check(version)) / "catalog.json"
