"""``vllm-rs serve``, vLLM's Rust frontend: the words it hands its managed Python engine,
by the option table of the release's own binary (``tools/vllm_rs.py``)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from kvconfig.load.argv import parse_serve_args
from kvconfig.load.vllm_rs import python_args, rust_options
from kvconfig.mirror import versions

ROOT = Path(__file__).resolve().parent.parent
KV = '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}'


@pytest.mark.parametrize("version", versions.KNOWN)
def test_every_release_has_the_table_of_its_binary(version: str) -> None:
    table = rust_options(version)
    assert table["--grpc-port"] == "1" and table["--headless"] == "0"
    assert table["--served-model-name"] == "*"
    assert "--kv-transfer-config" not in table and "--block-size" not in table


def test_rust_side_options_stay_and_the_rest_reaches_the_engine() -> None:
    argv = [
        "Qwen/Qwen3-0.6B", "--python", "/opt/venv/bin/python", "--engine-ready-timeout-secs", "30",
        "--served-model-name", "a", "b", "--grpc-port", "50051", "--enforce-eager",
        "--kv-transfer-config", KV, "--max-model-len", "8192", "--", "--block-size", "32",
    ]  # fmt: skip
    got = python_args(argv, "0.33.0")
    # the Rust side's own options leave with their values; those vLLM's parser takes stay
    assert got == [
        "Qwen/Qwen3-0.6B", "--served-model-name", "a", "b", "--grpc-port", "50051",
        "--enforce-eager", "--kv-transfer-config", KV, "--max-model-len", "8192",
        "--block-size", "32",
    ]  # fmt: skip
    args = parse_serve_args(argv, entry="vllm-rs")
    assert args.model == "Qwen/Qwen3-0.6B" and args.values["block-size"] == "32"
    assert json.loads(args.values["kv-transfer-config"])["kv_role"] == "kv_consumer"


@pytest.mark.vllm
def test_the_table_is_what_the_installed_binary_says() -> None:
    """The installed vLLM's ``vllm-rs serve --help``, read by the tool that wrote the
    tables, gives the table kvconfig holds for that release."""
    if importlib.util.find_spec("vllm") is None:
        pytest.skip("vLLM is not installed")
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import vllm_rs as tool
    finally:
        sys.path.pop(0)
    import vllm

    if vllm.__version__ not in versions.KNOWN:
        pytest.skip(f"kvconfig has no tables for vLLM {vllm.__version__}")
    binary = Path(vllm.__file__).parent / "vllm-rs"
    text = subprocess.run(
        [str(binary), "serve", "--help"], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert "forwards everything else to Python" in text
    assert tool.describe(text) == dict(rust_options(vllm.__version__))
