"""The repository configuration: found as documented, validated, and the command line wins."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import pytest

from kvconfig.errors import InputError
from kvconfig.load.repo_config import effective, find, load

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent


def _args(**given: object) -> argparse.Namespace:
    base: dict[str, object] = {"platform": None, "vllm_version": None, "env": [], "model_path": []}
    return argparse.Namespace(**{**base, **given})


def test_the_nearest_file_up_to_the_repository_root(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text('[tool.kvconfig]\nplatforms = ["H100"]\n')
    deep = tmp_path / "deploy" / "prod"
    deep.mkdir(parents=True)
    assert find(deep) == tmp_path / "pyproject.toml"
    (tmp_path / "deploy" / ".kvconfig.toml").write_text('platforms = ["H200"]\n')
    assert find(deep) == tmp_path / "deploy" / ".kvconfig.toml"
    assert find(tmp_path.parent) is None or find(tmp_path.parent) != tmp_path / "pyproject.toml"


def test_a_pyproject_without_the_table_is_not_a_configuration(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert find(tmp_path) is None


@pytest.mark.parametrize(
    "text",
    [
        '[tool.kvconfig]\nplatforms = ["H100"]\n',
        '[tool.kvconfig.env]\nA = "1"\n',
        '[ tool . "kvconfig" ]\nplatforms = ["H100"]\n',
        '[tool]\nkvconfig = { platforms = ["H100"] }\n',
        '[tool]\n"kvconfig".platforms = ["H100"]\n',
        'tool.kvconfig.platforms = ["H100"]\n[project]\nname = "x"\n',
        '[project]\nname = "kvconfig"\ndependencies = ["kvconfig"]\n',
        "[tool.other]\nkvconfig = 1\n",
        "[tool.ruff]\nline-length = 99\n# [tool.kvconfig] comes later\n",
    ],
)
def test_the_table_is_found_in_every_toml_spelling_as_the_toml_parser_reads_it(
    tmp_path: Path, text: str
) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text(text)
    tool = tomllib.loads(text).get("tool", {})
    found = find(tmp_path) == tmp_path / "pyproject.toml"
    assert found == ("kvconfig" in tool)
    if found:
        assert load(tmp_path / "pyproject.toml").model_dump(exclude_defaults=True)


def test_the_command_line_wins(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".kvconfig.toml").write_text(
        'platforms = ["H100", "H200"]\nvllm-version = "0.33.0"\nmodel-paths = ["/mnt/models=./m"]\n'
        '[env]\nVLLM_USE_V2_MODEL_RUNNER = "0"\nA = "1"\n'
    )
    args = effective(_args(env=["A=2"]), tmp_path)
    # the configured release sits below --vllm-version and above an image tag
    assert args.platform == "H100,H200" and args.vllm_version is None
    assert args.configured_version == "0.33.0"
    assert args.env == ["VLLM_USE_V2_MODEL_RUNNER=0", "A=2"]
    assert args.model_path == [f"/mnt/models={tmp_path / 'm'}"]
    args = effective(_args(platform="B200", vllm_version="0.32.0"), tmp_path)
    assert args.platform == "B200" and args.vllm_version == "0.32.0"


@pytest.mark.parametrize(
    ("text", "name", "message"),
    [
        ("platfroms = []\n", ".kvconfig.toml", "platfroms"),
        ("platforms = 3\n", ".kvconfig.toml", "platforms"),
        ("[tool.kvconfig]\nenv = 1\n", "pyproject.toml", "tool.kvconfig.env"),
        ("platforms = [\n", ".kvconfig.toml", "invalid TOML"),
        ("tool.kvconfig = 3\n", "pyproject.toml", "tool.kvconfig is not a table"),
    ],
)
def test_a_bad_configuration_is_one_line(
    tmp_path: Path, text: str, name: str, message: str
) -> None:
    (tmp_path / name).write_text(text)
    with pytest.raises(InputError) as err:
        load(tmp_path / name)
    assert message in str(err.value) and "\n" not in str(err.value)
    assert str(err.value).startswith(str(tmp_path / name))


def test_the_json_schema_is_exported_with_the_others() -> None:
    from kvconfig.report.export import schemas

    text = schemas()["repo-config.schema.json"]
    assert (ROOT / "schemas/json/repo-config.schema.json").read_text() == text
    assert json.loads(text)["properties"]["model-paths"]["type"] == "array"


def test_the_cli_plans_for_the_configured_platforms(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from kvconfig.cli import main

    (tmp_path / ".git").mkdir()
    (tmp_path / ".kvconfig.toml").write_text('platforms = ["H100", "H200"]\n')
    shutil.copytree(ROOT / "examples" / "models" / "qwen3-8b", tmp_path / "qwen3-8b")
    (tmp_path / "serve.yaml").write_text("model: ./qwen3-8b\nblock-size: 16\n")
    monkeypatch.chdir(tmp_path)
    assert main(["lint", "serve.yaml"]) == 0
    out = capsys.readouterr().out
    assert "[H100" in out and "[H200" in out
