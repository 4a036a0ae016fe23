"""The facts the hooks read off a running engine are the ones ``kvconfig lint`` computes.

FlashInfer's TRTLLM gate (``can_use_trtllm_attention``) decides FlashInfer's large pages
on SM10x. The hooks compute it with the resolver's function
(``kvconfig.mirror.platform.trtllm_usable``) from the engine's inputs; here it must equal
vLLM's own answer on every platform, not only on the ones whose size rules read it.
"""

from __future__ import annotations

import itertools

import pytest

pytest.importorskip("vllm")

from tools.catalog.emulate import Emulation, emulated

pytestmark = pytest.mark.vllm

CAPS = [(8, 0), (8, 9), (9, 0), (10, 0), (10, 3), (12, 0)]
CASES = list(itertools.product(CAPS, [None, False], [True, False], [False, True]))


@pytest.mark.parametrize(("cap", "use", "cubins", "invariant"), CASES)
def test_the_trtllm_fact_is_vllms(
    cap: tuple[int, int], use: bool | None, cubins: bool, invariant: bool
) -> None:
    from vllm.utils.flashinfer import can_use_trtllm_attention

    from kvconfig.hooks._vllm import Facts

    emu = Emulation(
        capability=cap,
        num_heads=32,
        num_kv_heads=8,
        use_trtllm_attention=use,
        cubins=cubins,
        batch_invariant=invariant,
    )
    with emulated(emu) as config:
        facts = Facts(config)
        assert facts.trtllm == bool(can_use_trtllm_attention(32, 8)), (cap, use, cubins)
