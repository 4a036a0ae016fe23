"""The seed's deployment written three ways (a Kubernetes Deployment, production-stack
values, a docker-compose service) reads to the options of its ``vllm serve`` config, and
plans to the same verdict on the GPU the file names.

The engines' arguments go through vLLM's parsing rules (``kvconfig.load.argv``), their
``/mnt/models`` paths through ``--model-path /mnt/models=examples/models`` (compose: its
bind mount), and the result is planned by the existing ``kvconfig plan`` as a serve
config.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from kvconfig.cli import main
from kvconfig.load.argv import parse_serve_args
from kvconfig.load.engines import engines_in
from kvconfig.load.hub import ModelPaths
from kvconfig.load.operator_engine import Engine

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "examples" / "qwen3-8b-eagle3-gh200-triton-128.yaml"
FILES = {
    "deployment": "qwen3-8b-eagle3-gh200-deployment.yaml",
    "production-stack": "qwen3-8b-eagle3-gh200-production-stack.yaml",
    "compose": "qwen3-8b-eagle3-gh200-compose.yaml",
}
PLAN_OPTIONS = ("block-size", "attention-backend", "speculative-config", "enable-prefix-caching")


def _serve_config(engine: Engine) -> dict[str, Any]:
    """The engine as a ``vllm serve --config`` mapping, model paths mapped to this machine."""
    rules = ModelPaths.parse(
        [*(f"{inside}={outside}" for inside, outside in engine.mounts),
         f"/mnt/models={ROOT / 'examples' / 'models'}"]
    )  # fmt: skip
    args = parse_serve_args(engine.argv, entry=engine.parser, base=Path(engine.base))
    assert args.model is not None
    config: dict[str, Any] = {"model": str(rules.map(args.model) or args.model)}
    for key in PLAN_OPTIONS:
        if key in args.values:
            config[key] = args.values[key]
    spec = json.loads(config["speculative-config"])
    spec["model"] = str(rules.map(spec["model"]) or spec["model"])
    config["speculative-config"] = spec
    config["block-size"] = int(config["block-size"])
    return config


def _plan(path: Path, platform: str) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    code = main(["plan", "--format", "json", "--platform", platform, str(path)], stdout=out)
    return code, json.loads(out.getvalue())


@pytest.mark.parametrize("name", FILES, ids=FILES.keys())
def test_same_options_as_the_serve_config(name: str) -> None:
    (engine,) = engines_in(ROOT / "examples" / "operators" / FILES[name], FILES[name])
    config = _serve_config(engine)
    assert config["model"] == str(ROOT / "examples" / "models" / "qwen3-8b")
    assert config["block-size"] == 128
    assert config["attention-backend"] == "FLASHINFER"
    assert config["speculative-config"] == {
        "model": str(ROOT / "examples" / "models" / "qwen3-8b-eagle3-angelslim"),
        "method": "eagle3",
        "num_speculative_tokens": 3,
        "attention_backend": "TRITON_ATTN",
    }
    assert engine.vllm_version == "0.33.0"
    if name != "compose":
        assert engine.platforms == ("GH200",)


@pytest.mark.parametrize("name", FILES, ids=FILES.keys())
def test_same_verdict_as_the_serve_config(name: str, tmp_path: Path) -> None:
    (engine,) = engines_in(ROOT / "examples" / "operators" / FILES[name], FILES[name])
    platform = engine.platforms[0] if engine.platforms else "gh200"
    written = tmp_path / "serve.yaml"
    written.write_text(json.dumps(_serve_config(engine)), encoding="utf-8")
    code, plan = _plan(written, platform)
    seed_code, seed = _plan(SEED, "gh200")
    assert (code, plan["verdict"]) == (seed_code, seed["verdict"]) == (1, "reject")
    assert plan["groups"] == seed["groups"]
    assert [f["code"] for f in plan["findings"]] == [f["code"] for f in seed["findings"]]


@pytest.mark.parametrize("name", FILES, ids=FILES.keys())
def test_the_file_itself_lints_as_the_serve_config(name: str) -> None:
    # the operator file straight to the command line: its engine, its GPU label (compose
    # names none: --platform), its bind mounts or --model-path for /mnt/models
    path = ROOT / "examples" / "operators" / FILES[name]
    args = [
        "plan",
        "--format",
        "json",
        "--model-path",
        f"/mnt/models={ROOT / 'examples' / 'models'}",
    ]
    if name == "compose":
        args += ["--platform", "gh200"]
    out = io.StringIO()
    code = main([*args, str(path)], stdout=out)
    plan = json.loads(out.getvalue())
    seed_code, seed = _plan(SEED, "gh200")
    assert (code, plan["verdict"], plan["platform"]) == (
        seed_code,
        seed["verdict"],
        seed["platform"],
    )
    assert plan["groups"] == seed["groups"]
    assert plan["findings"] == seed["findings"]
    assert plan["operator_engine"]["name"].endswith("vllm")
