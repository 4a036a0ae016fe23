"""Findings between a Mooncake prefill and decode engine: region lengths, the blocks sent."""

from __future__ import annotations

from collections.abc import Sequence

from kvconfig.fleet.components import components
from kvconfig.fleet.rules.common import Issue, Pair, Replan, _common_block
from kvconfig.mirror.connectors.mooncake import mooncake_region_lengths, mooncake_send


def mooncake_issues(pair: Pair, replan: Replan) -> list[Issue]:
    """KV710: Mooncake P and D with different blocks."""
    pm, dm = components(pair.prefill).mooncake, components(pair.decode).mooncake
    if not pm or not dm or pm[0].refusal is not None or dm[0].refusal is not None:
        return []
    p, d = pm[0], dm[0]
    if p.kernel is None or d.kernel is None:
        return []
    if (p.logical, p.kernel) == (d.logical, d.kernel):
        return []
    pe, de = pair.prefill, pair.decode
    values: dict[str, int | str | None] = {
        f"{pe.name}.block_size": p.logical,
        f"{pe.name}.mooncake_pages": p.kernel,
        f"{de.name}.block_size": d.logical,
        f"{de.name}.mooncake_pages": d.kernel,
    }
    both = (
        f"{pe.name}: B={p.logical}, Mooncake pages {p.kernel} ({p.pages} per block); "
        f"{de.name}: B={d.logical}, pages {d.kernel} ({d.pages} per block)"
    )
    err = mooncake_region_lengths(
        p.kv_block_len,
        d.kv_block_len,
        pe.tp,
        de.tp,
        p.total_kv_heads,
        producer_replicated=p.replicated,
    )

    def same(x: Pair) -> bool:
        a, b = components(x.prefill).mooncake, components(x.decode).mooncake
        return bool(a and b) and (a[0].logical, a[0].kernel) == (b[0].logical, b[0].kernel)

    blocks = _common_block(pair, same, replan, limit=1)
    fixes = [f"--block-size {blocks[0]} on both engines"] if blocks else []
    at = "mooncake/mooncake_connector.py"
    if err is not None:
        vllm = f"fails the transfer: {err} ({at}:_validate_asymmetric_region_lengths)"
        message = f"Mooncake's pages differ between {pe.name} and {de.name}: {both}."
    else:
        tokens = 4 * max(p.logical, d.logical)
        send = mooncake_send(tokens, p.logical, p.pages, d.logical, d.pages)
        if send.error is not None:
            vllm = (
                f"fails every request: '{send.error}' ({at}:_build_transfer_params); the "
                "decode engine recomputes or errors"
            )
            message = (
                f"Mooncake pairs {pe.name} with {de.name}: {both}. Only byte lengths are "
                "compared, and they match; P then has fewer blocks than D for every prompt."
            )
        else:
            first, last = send.sent
            vllm = (
                f"silent: for a {tokens}-token prompt P sends tokens {first}-{last} into D's "
                f"kernel pages {_ids(send.written)}, while D reads the prompt from pages "
                f"{_ids(send.expected)}: the decode engine attends over the wrong KV"
            )
            message = (
                f"Mooncake pairs {pe.name} with {de.name}: {both}. The sender expands D's "
                f"logical block ids with its own ratio ({p.pages}, not {d.pages}; "
                f"{at}:_logical_to_kernel_block_ids) and only compares byte lengths, which "
                "match."
            )
    return [Issue("KV710", [pe.name, de.name], message, vllm, fixes, values=values)]


def _ids(ids: Sequence[int]) -> str:
    if len(ids) > 6 and ids == list(range(ids[0], ids[0] + len(ids))):
        return f"{ids[0]}-{ids[-1]}"
    return "[" + ", ".join(map(str, ids)) + "]"
