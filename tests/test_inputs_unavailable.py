"""A model whose ``config.json`` cannot be read offline (a Hugging Face id that is not in
the cache, a path that is a mount inside the pod): the file is valid and kvconfig cannot
tell its plan, so the verdict is ``unknown`` (KV402, exit 0) in ``lint``, ``plan``,
``export``, every engine mode and the API, as it is in ``lint --fleet``; never bad input.
How the cache is read is tests/test_inputs_hub.py's business; here it only feeds the
outcome."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr
from pathlib import Path

import pytest

import kvconfig
from kvconfig.cli import main
from kvconfig.schemas.plan import Plan

ROOT = Path(__file__).resolve().parent.parent
QWEN_DIR = ROOT / "examples" / "models" / "qwen3-8b"

_MANIFEST = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: qwen3}
spec:
  template:
    spec:
      nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.33.0
          args: ["--model", "MODEL", "--block-size", "16"]
"""


@pytest.fixture(autouse=True)
def _empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty Hugging Face cache, and no download: nothing is readable but local folders."""
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "KVCONFIG_DOWNLOAD"):
        monkeypatch.delenv(name, raising=False)


def _run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stderr(err):
        code = main(list(args), stdout=out)
    return code, out.getvalue(), err.getvalue()


def _file(tmp_path: Path, model: str = "Qwen/Qwen3-8B", name: str = "d.yaml") -> str:
    path = tmp_path / name
    path.write_text(_MANIFEST.replace("MODEL", model).replace("qwen3}", f"{name[0]}}}"))
    return str(path)


def test_lint_says_unknown_and_how_to_give_the_model(tmp_path: Path) -> None:
    path = _file(tmp_path)
    code, out, err = _run("lint", path)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == f"unknown {path}:9 Deployment/d/vllm [H100 (sm90)]: KV402 model-unavailable"
    assert lines[1].startswith("  read: Qwen/Qwen3-8B ")  # what was read is still shown
    assert "'Qwen/Qwen3-8B' is not in the Hugging Face cache" in out
    assert "fix: pass --download" in out and "--model-path" in out
    assert lines[-1] == "0 of 1 safe, 1 unknown"
    assert "verdict unknown, 'Qwen/Qwen3-8B' is not in the Hugging Face cache" in err
    assert "(KV402)" in err and "Traceback" not in err


def test_the_model_given_plans_it(tmp_path: Path) -> None:
    path = _file(tmp_path)
    code, out, err = _run("lint", "--model-path", f"Qwen/Qwen3-8B={QWEN_DIR}", path)
    assert code == 0, err
    assert out.startswith("ok ") and "KV402" not in out + err


@pytest.mark.parametrize("command", ["lint", "plan", "export"])
def test_every_command_says_unknown_in_json(tmp_path: Path, command: str) -> None:
    path = _file(tmp_path, "/mnt/models")  # a mount inside the pod: no folder here
    code, out, err = _run(command, "--format", "json", path)
    assert code == 0, err
    plan = json.loads(out)
    Plan.model_validate(plan)
    assert plan["verdict"] == "unknown" and plan["groups"] == []
    assert [(f["code"], f["name"]) for f in plan["findings"]] == [("KV402", "model-unavailable")]
    assert "/mnt/models" in plan["findings"][0]["message"]


def test_a_drafter_missing_from_the_cache_is_unknown_too(tmp_path: Path) -> None:
    text = _MANIFEST.replace(
        '"--block-size", "16"]',
        '"--speculative-config", \'{"method": "eagle3", "model": "org/draft", '
        '"num_speculative_tokens": 2}\']',
    ).replace("MODEL", "Qwen/Qwen3-8B")
    path = tmp_path / "d.yaml"
    path.write_text(text)
    code, out, err = _run("lint", "--model-path", f"Qwen/Qwen3-8B={QWEN_DIR}", str(path))
    assert code == 0, err
    assert out.splitlines()[0].endswith("KV402 model-unavailable")
    assert "'org/draft' is not in the Hugging Face cache" in out


def test_the_engine_mode_cannot_start_without_it_either(tmp_path: Path) -> None:
    """``--engine vllm`` reads the model's config.json as vLLM would, from the same place:
    unknown too, decided before any engine runs."""
    path = _file(tmp_path)
    for engine in ("vllm", "both", "auto"):
        code, out, err = _run("lint", "--engine", engine, path)
        assert code == 0, (engine, err)
        assert "KV402 model-unavailable" in out.splitlines()[0], engine


def test_another_deployment_still_decides_the_exit_code(tmp_path: Path) -> None:
    unknown = _file(tmp_path, name="a.yaml")
    rejected = tmp_path / "b.yaml"
    rejected.write_text(
        _MANIFEST.replace("MODEL", str(QWEN_DIR)).replace('"16"', '"7"').replace("qwen3}", "b}")
    )
    code, out, _ = _run("lint", unknown, str(rejected))
    assert code == 1
    assert out.splitlines()[0].startswith(f"unknown {unknown}:9")


def test_a_bad_file_beside_it_is_still_exit_2(tmp_path: Path) -> None:
    unknown = _file(tmp_path, name="a.yaml")
    bad = tmp_path / "b.yaml"
    bad.write_text(_MANIFEST.replace("MODEL", str(QWEN_DIR)).replace('"16"', '"x"'))
    code, out, err = _run("lint", unknown, str(bad))
    assert code == 2
    assert out.splitlines()[0].startswith(f"unknown {unknown}:9")
    assert f"{bad}:9: Deployment/qwen3/vllm: block-size: expected an integer" in err


def test_the_api_reads_it_as_unknown(tmp_path: Path) -> None:
    path = _file(tmp_path)
    (found,) = kvconfig.load_engines([path])
    assert found.deployment is None
    assert isinstance(found.unsupported, kvconfig.ModelUnavailable)
    assert isinstance(found.unsupported, kvconfig.InputError)  # load_deployment raises it
    (outcome,) = kvconfig.plan_deployments([path])
    assert outcome.verdict == "unknown"
    assert [f.code for f in outcome.plan.findings] == ["KV402"]
    assert kvconfig.exit_code([outcome]) == 0
    serve = tmp_path / "serve.yaml"  # one deployment, loaded alone: the error is raised
    serve.write_text("model: Qwen/Qwen3-8B\n")
    with pytest.raises(kvconfig.ModelUnavailable, match="not in the Hugging Face cache"):
        kvconfig.load_deployment(str(serve))
