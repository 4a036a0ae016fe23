"""``--kv-offloading-size`` makes the KV connector vLLM runs with: kvconfig's
``effective_kv_transfer`` is ``VllmConfig._post_init_kv_transfer_config`` (``config/vllm.py``),
checked against vLLM's own method on real ``CacheConfig`` and ``KVTransferConfig`` objects,
and every command reads the connector it makes."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kvconfig.cli import main
from kvconfig.load.engines import engines_in
from kvconfig.load.reading import reading_of
from kvconfig.mirror.connectors.registry import effective_kv_transfer

ROOT = Path(__file__).resolve().parent.parent
QWEN = ROOT / "examples" / "models" / "qwen3-8b"

CASES = [
    # (--kv-offloading-size, --kv-offloading-backend, --kv-transfer-config, environment)
    (None, None, None, {}),
    (None, "lmcache", {"kv_connector": "NixlConnector", "kv_role": "kv_producer"}, {}),
    ("5", None, None, {}),
    ("0.5", "native", None, {"VLLM_USE_SIMPLE_KV_OFFLOAD": "1"}),
    ("8", "native", None, {"VLLM_USE_SIMPLE_KV_OFFLOAD": "0"}),
    ("5", "lmcache", None, {}),
    ("2", "native", {"kv_connector": "NixlConnector", "kv_role": "kv_producer"}, {}),
    (
        "3",
        "lmcache",
        {
            "kv_connector": "LMCacheConnectorV1",
            "kv_role": "kv_consumer",
            "kv_connector_extra_config": {"a": 1},
        },
        {},
    ),
]


@pytest.mark.vllm
@pytest.mark.parametrize(("size", "backend", "kv", "env"), CASES)
def test_the_connector_is_vllms(
    size: str | None,
    backend: str | None,
    kv: dict[str, Any] | None,
    env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("vllm")
    from vllm.config import CacheConfig, KVTransferConfig, VllmConfig

    monkeypatch.delenv("VLLM_USE_SIMPLE_KV_OFFLOAD", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    cache = CacheConfig(
        kv_offloading_size=float(size) if size is not None else None,
        **({"kv_offloading_backend": backend} if backend else {}),
    )
    holder = SimpleNamespace(
        cache_config=cache, kv_transfer_config=KVTransferConfig(**kv) if kv else None
    )
    VllmConfig._post_init_kv_transfer_config(holder)  # type: ignore[arg-type]
    theirs = holder.kv_transfer_config
    values = {
        k: v
        for k, v in {"kv-offloading-size": size, "kv-offloading-backend": backend}.items()
        if v is not None
    }
    ours = effective_kv_transfer(kv, values, env)
    if theirs is None:
        assert ours is None
        return
    assert ours is not None
    assert (ours.get("kv_connector"), ours.get("kv_role")) == (
        theirs.kv_connector,
        theirs.kv_role,
    )
    assert (ours.get("kv_connector_extra_config") or {}) == theirs.kv_connector_extra_config


def _script(tmp_path: Path, extra: str) -> Path:
    path = tmp_path / "serve.sh"
    path.write_text(f"#!/bin/bash\nvllm serve {QWEN} --block-size 16 {extra}\n")
    return path


def test_the_reading_shows_the_connector_offloading_makes(tmp_path: Path) -> None:
    path = _script(tmp_path, "--kv-offloading-size 5 --kv-offloading-backend lmcache")
    (engine,) = engines_in(path, str(path))
    reading = reading_of(engine)
    assert (reading.connector, reading.kv_role) == ("LMCacheMPConnector", "kv_both")
    path = _script(tmp_path, "--kv-offloading-size 5")
    (engine,) = engines_in(path, str(path), env={"VLLM_USE_SIMPLE_KV_OFFLOAD": "1"})
    assert reading_of(engine).connector == "SimpleCPUOffloadConnector"


def test_a_connector_without_hma_turns_the_hybrid_manager_off(tmp_path: Path) -> None:
    """LMCacheMPConnector does not support HMA: with it vLLM runs without the hybrid
    KV-cache manager, as ``VllmConfig.__post_init__`` decides after the connector is made;
    the plan of a sliding-window model then has one group, not two."""
    model = ROOT / "examples" / "models" / "gpt-oss-120b"
    groups = {}
    for backend in ("native", "lmcache"):
        serve = tmp_path / f"{backend}.yaml"
        serve.write_text(
            f"model: {model}\nkv-offloading-size: 4\nkv-offloading-backend: {backend}\n"
        )
        out_path = tmp_path / f"{backend}.json"
        code = main(["export", "--platform", "h100", str(serve), "-o", str(out_path)])
        assert code == 0
        groups[backend] = len(json.loads(out_path.read_text())["groups"])
    assert groups["native"] > groups["lmcache"] == 1
