"""``TransferTopology``'s TP and block-size ratios
(``vllm/distributed/kv_transfer/kv_connector/utils.py``)."""

from __future__ import annotations

from kvconfig.errors import ConnectorRefusal


def tp_ratio(local_tp: int, remote_tp: int) -> int:
    """``TransferTopology.tp_ratio`` (``kv_connector/utils.py``): positive when the local
    side has the larger TP, negative when the remote has."""
    if local_tp >= remote_tp:
        if local_tp % remote_tp:
            raise ConnectorRefusal(
                "AssertionError",
                f"Local tensor parallel size {local_tp} is not divisible "
                f"by remote tensor parallel size {remote_tp}.",
            )
        return local_tp // remote_tp
    if remote_tp % local_tp:
        raise ConnectorRefusal(
            "AssertionError",
            f"Remote tensor parallel size {remote_tp} is not divisible "
            f"by local tensor parallel size {local_tp}.",
        )
    return -(remote_tp // local_tp)


def block_size_ratio(local: int, remote: int) -> int:
    """``TransferTopology.block_size_ratio`` (``kv_connector/utils.py``)."""
    if local % remote:
        raise ConnectorRefusal(
            "AssertionError",
            f"Local block size {local} is not divisible by remote block size {remote} "
            "or vice versa.",
        )
    return local // remote
