"""The layers of a pipeline stage (``vllm/distributed/utils.py``) and a layer's index
(``vllm/model_executor/models/utils.py``)."""

from __future__ import annotations


def pp_indices(num_layers: int, rank: int, size: int, partition: str | None = None) -> range:
    """The layers of pipeline stage ``rank``: ``get_pp_indices`` (``distributed/utils.py``),
    with ``VLLM_PP_LAYER_PARTITION`` as ``partition``."""
    if partition is not None:
        parts = [int(p) for p in partition.split(",")]
    else:
        per = num_layers // size
        parts = [per] * size
        rest = num_layers % size
        for i in range(2, rest + 2):
            parts[-i] += 1
    start = sum(parts[:rank])
    return range(start, start + parts[rank])


def layer_index(name: str) -> int | None:
    """The layer index in a layer's name: its one integer part (``extract_layer_index``,
    ``model_executor/models/utils.py``); None when there is not exactly one."""
    ints = [int(p) for p in name.split(".") if p.isdigit()]
    return ints[0] if len(ints) == 1 else None
