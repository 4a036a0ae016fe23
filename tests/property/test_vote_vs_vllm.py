"""kvconfig's vote against vLLM 0.33.0's own ``select_common_block_size``.

The backends are stub classes that declare generated sizes through vLLM's own
``MultipleOf``; vLLM's function decides, and kvconfig must return the same size, or
fail with the same message.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kvconfig.errors import NoCommonKernelBlockSize
from kvconfig.mirror.vote import select_common
from kvconfig.schemas.sizes import KernelSize, MultipleOf

pytest.importorskip("vllm")
pytestmark = pytest.mark.vllm

POWERS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
exact = st.one_of(st.sampled_from(POWERS), st.integers(1, 600))
multiple = st.builds(MultipleOf, st.one_of(st.sampled_from(POWERS[:9]), st.integers(1, 200)))
size_lists = st.lists(st.one_of(exact, multiple), min_size=1, max_size=4)


@pytest.fixture(scope="module")
def vllm_vote() -> Any:
    from tools.catalog import emulate

    emulate.install()
    from vllm.v1.attention.backend import MultipleOf as VMultipleOf
    from vllm.v1.worker.utils import select_common_block_size

    def vote(block_size: int, declared: Sequence[Sequence[KernelSize]]) -> int | str:
        backends = []
        for i, sizes in enumerate(declared):
            theirs = [s if isinstance(s, int) else VMultipleOf(s.multiple_of) for s in sizes]
            backends.append(
                type(
                    f"Stub{i}",
                    (),
                    {
                        "get_supported_kernel_block_sizes": staticmethod(
                            lambda spec=None, theirs=theirs: list(theirs)
                        ),
                        "get_name": staticmethod(lambda i=i: f"B{i}"),
                    },
                )
            )
        try:
            return int(select_common_block_size(block_size, backends))
        except ValueError as err:
            return str(err)

    return vote


@given(
    declared=st.lists(size_lists, min_size=0, max_size=4),
    block_size=st.one_of(st.sampled_from(POWERS), st.integers(1, 2048)),
)
def test_kvconfig_votes_like_vllm(
    vllm_vote: Any, declared: list[list[KernelSize]], block_size: int
) -> None:
    theirs = vllm_vote(block_size, declared)
    try:
        ours: int | str = select_common(block_size, [(f"B{i}", s) for i, s in enumerate(declared)])
    except NoCommonKernelBlockSize as err:
        ours = str(err)
    assert ours == theirs
