"""A requested backend kvconfig cannot vouch for is a finding, never a pass.

vLLM's ``CudaPlatform.get_attn_backend_cls`` validates a requested backend with the
backend's own ``validate_configuration``; kvconfig mirrors those checks for the CUDA
backends in its trait tables (``kvconfig.mirror.traits``, ``traits_mla``). A name outside
them is either a backend of another vLLM platform (CPU, ROCm, XPU: no CUDA kernels, the
engine cannot run it, KV301) or one kvconfig has no rules for (KV304); on a platform
whose checks kvconfig does not model at all, every request is KV304.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from kvconfig.cli import main
from kvconfig.mirror.catalog import load_catalog
from kvconfig.mirror.selection import TRAITS
from kvconfig.mirror.versions import DEFAULT

ROOT = Path(__file__).resolve().parents[1]
QWEN = "model: ./models/qwen3-8b\nattention-backend: {backend}\n"


def _plan(tmp_path: Path, backend: str, platform: str) -> tuple[int, dict[str, Any]]:
    models = tmp_path / "models"
    if not models.exists():
        models.symlink_to(ROOT / "examples" / "models")
    path = tmp_path / f"{backend}.yaml"
    path.write_text(QWEN.format(backend=backend), encoding="utf-8")
    out = io.StringIO()
    code = main(["plan", "--platform", platform, "--format", "json", str(path)], stdout=out)
    doc: dict[str, Any] = json.loads(out.getvalue())
    return code, doc


def _codes(doc: dict[str, Any]) -> list[str]:
    return [f["code"] for f in doc["findings"]]


@pytest.mark.parametrize(
    ("backend", "platform_file"),
    [("CPU_ATTN", "cpu.py"), ("ROCM_ATTN", "rocm.py"), ("ROCM_AITER_FA", "rocm.py")],
)
def test_another_platforms_backend_is_refused_on_cuda(
    tmp_path: Path, backend: str, platform_file: str
) -> None:
    code, doc = _plan(tmp_path, backend, "h100")
    assert code == 1 and doc["verdict"] == "reject"
    assert _codes(doc) == ["KV301"]
    message = doc["findings"][0]["message"]
    assert message.startswith(f"{backend}, requested by --attention-backend for 36 target")
    assert f"vllm/platforms/{platform_file}" in message and "no CUDA kernels" in message


def test_a_cuda_backend_without_rules_is_a_finding(tmp_path: Path) -> None:
    code, doc = _plan(tmp_path, "FLASH_ATTN_DIFFKV", "h100")
    assert code == 1 and doc["verdict"] == "reject"
    assert _codes(doc) == ["KV304"]
    (finding,) = doc["findings"]
    assert finding["name"] == "backend-unknown" and finding["severity"] == "error"
    assert (
        "Selected backend FLASH_ATTN_DIFFKV is not valid for this configuration"
        in (finding["message"])
    )


def test_a_platform_kvconfig_has_no_rules_for_makes_every_request_a_finding(
    tmp_path: Path,
) -> None:
    code, doc = _plan(tmp_path, "TRITON_ATTN", "mi300x")
    assert code == 1 and _codes(doc) == ["KV304"]
    assert "rocm" in doc["findings"][0]["message"]


def test_a_modelled_backend_still_plans(tmp_path: Path) -> None:
    code, doc = _plan(tmp_path, "FLASH_ATTN", "h100")
    assert code == 0 and doc["verdict"] == "ok"


@pytest.mark.parametrize("backend", sorted(load_catalog(DEFAULT).registry))
def test_no_backend_name_passes_without_rules(tmp_path: Path, backend: str) -> None:
    code, doc = _plan(tmp_path, backend, "h100")
    if backend not in TRAITS:
        assert code == 1, (backend, doc["findings"])
        assert set(_codes(doc)) & {"KV301", "KV304"}, (backend, doc["findings"])
