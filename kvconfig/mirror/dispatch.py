"""One kernel block size per KV-cache group, as vLLM's ``prepare_kernel_block_sizes`` picks it.

Mirrors ``prepare_kernel_block_sizes`` in ``vllm/v1/worker/utils.py`` over plain
descriptions of the groups, in the order of ``KVCacheConfig.kv_cache_groups``. This is
the one dispatch: the resolver runs it for the model runner's vote and for the Model
Runner V2 speculator's, the hooks for kvconfig's own vote in a running engine, and the
differential test against vLLM's function.

* an encoder-only group is **skipped**: nothing is appended, so every later group's
  value moves one place to the left (vLLM's runners index the list by group id and
  treat a missing entry as "no split");
* a group whose spec has no per-layer views (HiSparse) keeps its block size B;
* an attention group keeps B when a KV-cache tensor it shares is packed
  (``block_stride > layer_stride``), and otherwise takes the vote of
  :func:`kvconfig.mirror.vote.select_common` over its attention groups' declared sizes;
* a Mamba (state) group keeps B;
* any other spec with layer views is an error, as in vLLM.

For a ``UniformTypeKVCacheSpecs`` group, the kind is that of its first layer spec.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, NamedTuple

from kvconfig.mirror.vote import Declared, select_common

SpecClass = Literal["attention", "encoder_only", "mamba", "other"]
"""What the class of a group's spec is, as the dispatch sees it: an ``AttentionSpec``
(any but encoder-only), an ``EncoderOnlyAttentionSpec``, a ``MambaSpec``, or anything
else."""


class GroupInput(NamedTuple):
    """What ``prepare_kernel_block_sizes`` reads of one KV-cache group."""

    spec: SpecClass
    """The class of the group's spec (of its first layer spec for uniform-type groups)."""
    block_size: int
    """B: the group's manager block size in tokens."""
    has_layer_views: bool = True
    """False for specs allocated without per-layer views (HiSparse hot/resident)."""
    packed: bool = False
    """A KV-cache tensor holding one of the group's layers has block_stride > layer_stride."""
    voters: tuple[Declared, ...] = ()
    """One entry per attention group: the backend's vLLM name and the sizes it declares
    for that group's (customized) layer spec."""


def group_kernel_block_size(group: GroupInput) -> int | None:
    """The group's kernel block size; None for an encoder-only group (skipped)."""
    if group.spec == "encoder_only":
        return None
    if not group.has_layer_views:
        return group.block_size
    if group.spec == "attention":
        if group.packed:
            return group.block_size
        return select_common(group.block_size, group.voters)
    if group.spec == "mamba":
        return group.block_size
    raise NotImplementedError(f"unknown kv cache spec class {group.spec!r}")


def prepare_kernel_block_sizes(groups: Sequence[GroupInput]) -> list[int]:
    """The list vLLM's runner gets: one size per group, encoder-only groups left out.

    Raises :class:`kvconfig.errors.NoCommonKernelBlockSize` (a ValueError whose text
    is vLLM's) when a group's backends share no kernel block size.
    """
    out: list[int] = []
    for group in groups:
        size = group_kernel_block_size(group)
        if size is not None:
            out.append(size)
    return out


def held_kernel_block_size(attention_group: Any) -> int | None:
    """The kernel block size a running vLLM attention group reads with (None: its B).

    Newer releases keep it on the group (``AttentionGroup.kernel_block_size``, set where
    ``create_metadata_builders`` narrows the runner's value); older ones on each metadata
    builder (``AttentionMetadataBuilder.set_kernel_block_size``). Read by
    the hooks' checks and the engine child's readout.
    """
    k = getattr(attention_group, "kernel_block_size", None)
    if k is None:
        builders = getattr(attention_group, "metadata_builders", None) or [None]
        k = getattr(builders[0], "kernel_block_size", None)
    return int(k) if k is not None else None
