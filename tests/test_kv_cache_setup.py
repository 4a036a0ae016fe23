"""llm-d-kv-cache's ``vllm-setup-helm`` values, read as its ``templates/deployment.yaml``
renders them (``kvconfig.load.helm.kv_cache_setup``)."""

from __future__ import annotations

from pathlib import Path

from kvconfig.load.engines import engines_in
from kvconfig.load.reading import reading_of

_VALUES = """vllm:
  replicaCount: 3
  image: {repository: vllm/vllm-openai, tag: "v0.10.0"}
  model: {name: Qwen/Qwen3-8B, label: q, maxModelLen: 8192}
  maxNumBatchedTokens: 1024
  enableChunkedPrefill: false
  tensorParallelSize: 2
  gpuMemoryUtilization: null
  extraEnv: {B_VAR: '2', A_VAR: '1'}
  blockSize: 32
kvCacheManager: {enabled: true, service: {port: 5557}}
lmcache: {enabled: true, connector: LMCacheConnectorV1, role: kv_both}
persistence: {mountPath: /data}
pythonHashSeed: "0"
"""


def test_the_chart_s_command_from_its_values(tmp_path: Path) -> None:
    """Each option is written when its value is set (``{{- if }}``); LMCache adds the
    connector, the kv-cache-manager the KV events; ``extraEnv`` by sorted key."""
    (engine,) = engines_in(_VALUES, str(tmp_path / "values.yaml"), base=tmp_path)
    r = reading_of(engine)
    assert (r.model, r.tensor, r.block_size, r.replicas) == ("Qwen/Qwen3-8B", 2, 32, 3)
    assert "--no-enable-chunked-prefill" in engine.argv
    assert "--gpu-memory-utilization" not in engine.argv
    config = engine.argv[engine.argv.index("--kv-transfer-config") + 1]
    assert config == '{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}'
    assert "--kv-events-config" in engine.argv and engine.env["PYTHONHASHSEED"] == "0"
    assert [k for k in engine.env if k.endswith("_VAR")] == ["A_VAR", "B_VAR"]


def test_without_lmcache_and_the_manager(tmp_path: Path) -> None:
    text = _VALUES.replace("lmcache: {enabled: true", "lmcache: {enabled: false")
    text = text.replace("kvCacheManager: {enabled: true", "kvCacheManager: {enabled: false")
    (engine,) = engines_in(text, str(tmp_path / "values.yaml"), base=tmp_path)
    assert "--kv-transfer-config" not in engine.argv
    assert "--kv-events-config" not in engine.argv and "PYTHONHASHSEED" not in engine.env
