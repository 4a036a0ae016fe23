"""The names kvconfig checks bad input against are the installed vLLM's own.

kvconfig's lint path cannot import vLLM, so it keeps these lists as data (the version
registry's ``facts.json``, the catalog, a few constants); each is compared here with the
vLLM definition it mirrors.
"""

from __future__ import annotations

from typing import get_args

import pytest

from kvconfig.load import checks as _checks
from kvconfig.mirror import versions
from kvconfig.mirror.catalog import load_catalog

pytest.importorskip("vllm")
pytestmark = pytest.mark.vllm


def _flatten(literal: object) -> set[str]:
    out: set[str] = set()
    for arg in get_args(literal):
        out |= _flatten(arg) if get_args(arg) else {arg}
    return out


@pytest.fixture(scope="module", autouse=True)
def _emulated() -> None:
    from tools.catalog import emulate

    emulate.install()


def _facts() -> versions.Facts:
    import vllm

    return versions.facts(vllm.__version__.split("+")[0])


def test_speculative_methods_are_vllms() -> None:
    from vllm.config.speculative import MTPModelTypes, SpeculativeMethod

    assert set(_facts().speculative_methods) == _flatten(SpeculativeMethod)
    assert set(_facts().mtp_methods) == _flatten(MTPModelTypes)


def test_backend_per_kind_keys_are_vllms_spec_kinds() -> None:
    from vllm.v1.kv_cache_interface import KVCacheSpecKind

    assert set(_facts().spec_kinds) == {k.value for k in KVCacheSpecKind}


def test_backend_names_are_vllms_enum() -> None:
    from vllm.v1.attention.backends.registry import AttentionBackendEnum

    known = set(load_catalog(_facts().version).registry) | set(_checks.VLLM_ONLY_BACKENDS)
    assert known == {e.name for e in AttentionBackendEnum}


def test_env_choices_are_vllms() -> None:
    import os

    from vllm import envs

    choices = _checks.ENV_CHOICES["VLLM_KV_CACHE_LAYOUT"]
    assert choices is not None
    for value in choices:
        os.environ["VLLM_KV_CACHE_LAYOUT"] = value
        try:
            assert envs.environment_variables["VLLM_KV_CACHE_LAYOUT"]() == value
        finally:
            del os.environ["VLLM_KV_CACHE_LAYOUT"]
    os.environ["VLLM_KV_CACHE_LAYOUT"] = "nhd"
    try:
        with pytest.raises(ValueError):
            envs.environment_variables["VLLM_KV_CACHE_LAYOUT"]()
    finally:
        del os.environ["VLLM_KV_CACHE_LAYOUT"]
    integers = [name for name, choices in _checks.ENV_CHOICES.items() if choices is None]
    assert "VLLM_MLA_DISABLE" in integers
    for name in integers:
        os.environ[name] = "true"
        try:
            with pytest.raises(ValueError):  # vLLM's int(): what kvconfig refuses
                envs.environment_variables[name]()
        finally:
            del os.environ[name]
