"""Files from a stranger's pull request (docs/security.md): nothing outside the allowed
roots is read, no value of an env file and no secret is printed in any format, and every
reader refuses FIFOs, devices, folders, oversized and over-nested input in one line.

Each case runs the command line in-process (``kvconfig.cli.main``) on a throw-away git
repository: ``repo/.git`` exists, and the files outside it are what a hostile path
reaches for.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

import pytest

from kvconfig.cli import main
from kvconfig.load.roots import allowed_roots, inside, reading_within
from kvconfig.secrets import MASK, forget, redact, remember_env
from tests.conftest import EXAMPLES

QWEN3 = EXAMPLES / "models" / "qwen3-8b"
FORMATS = ("text", "json", "sarif", "github")
SECRET = "s3cr3t-value-from-the-env-file"
TOKEN = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123"


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository with a model folder; the working folder."""
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    shutil.copytree(QWEN3, root / "models" / "qwen3-8b")
    monkeypatch.chdir(root)
    return root


def _outside_model(tmp_path: Path) -> Path:
    folder = tmp_path / "outside" / "qwen3-8b"
    shutil.copytree(QWEN3, folder)
    return folder


# ------------------------------------------------------------------ the allowed roots


def test_the_allowed_roots_are_the_repositories_and_what_the_command_line_names(
    repo: Path, tmp_path: Path
) -> None:
    (repo / "deploy").mkdir()
    roots = allowed_roots(["deploy/x.yaml"], [str(tmp_path / "extra")])
    assert repo in roots and tmp_path / "extra" in roots
    with reading_within(roots):
        assert inside(repo / "models" / "qwen3-8b")
        assert inside(tmp_path / "extra" / "m")
        assert not inside(tmp_path / "outside")
        assert not inside(Path("/etc"))
        (repo / "link").symlink_to(tmp_path / "outside")
        assert not inside(repo / "link")  # a link is followed before the check


def test_a_model_folder_outside_the_repository_is_not_read(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = _outside_model(tmp_path)
    (repo / "serve.yaml").write_text(f"model: {outside}\nblock-size: 16\n")
    code, _, err = _run(["lint", "--platform", "h200", "serve.yaml"], capsys)
    assert code == 2 and err.count("\n") == 1
    assert "lies outside the repository; kvconfig does not read it" in err
    assert "--allow-path" in err
    code, _, err = _run(
        ["lint", "--platform", "h200", "serve.yaml", "--allow-path", str(outside.parent)], capsys
    )
    assert (code, err) == (0, "")
    # a link inside the repository that leads out is outside too
    (repo / "models" / "linked").symlink_to(outside)
    (repo / "serve.yaml").write_text("model: models/linked\nblock-size: 16\n")
    code, _, err = _run(["lint", "--platform", "h200", "serve.yaml"], capsys)
    assert code == 2 and "outside the repository" in err


def _compose(repo: Path, env_file: str, volume: str = "./models:/mnt/models:ro") -> Path:
    path = repo / "compose.yaml"
    path.write_text(
        "services:\n"
        "  vllm:\n"
        "    image: vllm/vllm-openai:v0.33.0\n"
        "    command: [/mnt/models/qwen3-8b, --block-size, '16']\n"
        f"    env_file: [{env_file}]\n"
        f"    volumes: ['{volume}']\n"
    )
    return path


@pytest.mark.parametrize("how", ["absolute", "dotdot"])
def test_a_compose_env_file_outside_the_repository_is_not_read(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    outside = tmp_path / "secret.env"
    # read, it would switch the runner (and its value would be known to kvconfig)
    outside.write_text(f"VLLM_USE_V2_MODEL_RUNNER=0\nHF_TOKEN={TOKEN}\n")
    name = str(outside) if how == "absolute" else "../secret.env"
    _compose(repo, name)
    code, out, err = _run(
        ["plan", "--platform", "h200", "--format", "json", "compose.yaml"], capsys
    )
    assert code == 0, err
    assert "outside the repository: not read" in out
    assert json.loads(out)["runner"] == "v2"
    assert TOKEN not in out + err


def test_a_compose_bind_mount_outside_the_repository_is_not_followed(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = _outside_model(tmp_path)
    (repo / "empty.env").write_text("")
    _compose(repo, "empty.env", f"{outside.parent}:/mnt/models:ro")
    code, out, err = _run(["lint", "--platform", "h200", "compose.yaml"], capsys)
    # the folder is not read: the model is not here, so kvconfig cannot tell (KV402)
    assert code == 0 and err.count("\n") == 1
    assert out.startswith("unknown ") and "KV402 model-unavailable" in out.splitlines()[0]
    assert "'/mnt/models/qwen3-8b' is neither a local folder" in err
    _compose(repo, "empty.env")  # the same mount inside the repository is followed
    code, _, err = _run(["lint", "--platform", "h200", "compose.yaml"], capsys)
    assert (code, err) == (0, "")


def test_a_bind_mount_whose_folder_is_not_here_leaves_the_model_unknown(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A compose bind mount of a folder the repository does not hold (a download step or a
    README fills it when the container runs): the model cannot be read, the verdict is
    unknown (KV402); the same folder named by --model-path is the user's mistake (exit 2)."""
    (repo / "empty.env").write_text("")
    _compose(repo, "empty.env", "./weights:/mnt/models:ro")
    code, out, err = _run(["lint", "--platform", "h200", "compose.yaml"], capsys)
    assert code == 0 and "KV402 model-unavailable" in out.splitlines()[0]
    assert "lies in the bind mount of /mnt/models" in err
    code, _, err = _run(
        ["lint", "--platform", "h200", "--model-path", "/mnt/models=./gone", "compose.yaml"],
        capsys,
    )
    assert code == 2 and "(--model-path), which does not exist" in err


def test_a_ray_serve_llm_config_path_outside_the_repository_is_not_read(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = tmp_path / "llm.yaml"
    outside.write_text(f"model_loading_config: {{model_id: {SECRET}}}\n")
    (repo / "serve.yaml").write_text(
        "applications:\n"
        "  - name: llm\n"
        "    import_path: ray.serve.llm:build_openai_app\n"
        "    args:\n"
        f"      llm_configs: [{outside}]\n"
    )
    code, out, err = _run(["lint", "--platform", "h200", "serve.yaml"], capsys)
    assert code == 2 and err.count("\n") == 1
    assert "lies outside the repository; kvconfig does not read it" in err
    assert SECRET not in out + err


# ------------------------------------------------------------------ secrets


@pytest.mark.parametrize("fmt", FORMATS)
def test_values_from_env_files_are_never_printed(
    repo: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    # .env feeds compose's interpolation; vllm.env the container's variables
    (repo / ".env").write_text(f"BLOCK={SECRET}\n")
    (repo / "vllm.env").write_text(f"HF_TOKEN={TOKEN}\n")
    path = repo / "compose.yaml"
    path.write_text(
        "services:\n"
        "  vllm:\n"
        "    image: vllm/vllm-openai:v0.33.0\n"
        "    command: [/mnt/models/qwen3-8b, --block-size, '${BLOCK}']\n"
        "    env_file: [vllm.env]\n"
        "    environment: {API_KEY: " + TOKEN[::-1] + "}\n"
        "    volumes: ['./models:/mnt/models:ro']\n"
    )
    # the value lands where vLLM's parser refuses it: the error line would quote it
    code, out, err = _run(["lint", "--platform", "h200", "--format", fmt, "compose.yaml"], capsys)
    assert code == 2
    assert "block-size" in err
    for text in (out, err):
        assert SECRET not in text and TOKEN not in text and TOKEN[::-1] not in text
    assert MASK in err


@pytest.mark.parametrize("fmt", FORMATS)
def test_secret_looking_variables_of_a_pasted_command_are_never_printed(
    capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    command = [
        "--",
        f"MY_PASSWORD={SECRET}",
        "vllm",
        "serve",
        str(QWEN3),
        "--block-size",
        SECRET,
    ]
    code, out, err = _run(["lint", "--platform", "h200", "--format", fmt, *command], capsys)
    assert code == 2
    assert SECRET not in out + err


def test_token_shapes_are_masked_even_when_unnamed() -> None:
    forget()
    assert (
        redact(f"model {TOKEN} and Bearer abcdefghijklmnopqrstu")
        == f"model {MASK} and Bearer {MASK}"
    )
    remember_env({"VLLM_USE_V2_MODEL_RUNNER": "0", "DB_PASSWORD": 'p"w\\d'})
    assert redact(json.dumps({"x": 'p"w\\d'})) == json.dumps({"x": MASK})
    assert redact("runner 0") == "runner 0"
    forget()


# ------------------------------------------------------------------ bounded readers


def _fifo(tmp_path: Path) -> Path:
    fifo = tmp_path / "plan.fifo"
    os.mkfifo(fifo)
    return fifo


def _timed(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``main(argv)`` in a thread that must finish within 20 s (a hang fails, not stalls)."""
    result: list[int] = []
    worker = threading.Thread(target=lambda: result.append(main(argv)), daemon=True)
    worker.start()
    worker.join(20)
    assert result, f"kvconfig {' '.join(argv)} hangs"
    out, err = capsys.readouterr()
    return result[0], out, err


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "folder", "oversized", "deep", "not-utf8"])
def test_diff_refuses_what_is_not_a_plan_file_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    good = tmp_path / "good.json"
    good.write_text("{}")
    bad = {
        "fifo": lambda: _fifo(tmp_path),
        "dev-zero": lambda: Path("/dev/zero"),
        "folder": lambda: tmp_path,
        "oversized": lambda: _write(tmp_path / "big.json", b" " * (17 * 1024 * 1024)),
        "deep": lambda: _write(tmp_path / "deep.json", b"[" * 100_000 + b"]" * 100_000),
        "not-utf8": lambda: _write(tmp_path / "bin.json", b"\xff\xfe{}"),
    }[kind]()
    code, out, err = _timed(["diff", str(bad), str(good)], capsys)
    assert (code, out) == (2, "")
    assert err.startswith("kvconfig: ") and err.count("\n") == 1
    assert "Traceback" not in err


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    "argv",
    [
        ["--speculative-config", "[" * 5000 + "]" * 5000],
        ["--speculative-config.model", "[" * 5000 + "]" * 5000],
        ["--hf-overrides", '{"a":' * 3000 + "1" + "}" * 3000],
    ],
    ids=["json", "dotted", "object"],
)
def test_deeply_nested_json_in_an_option_is_bad_input(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    code, _, err = _timed(
        ["lint", "--platform", "h200", "--", "vllm", "serve", str(QWEN3), *argv], capsys
    )
    assert code == 2 and err.count("\n") == 1, err
    assert "Traceback" not in err


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1", "0", "soon"])
def test_an_engine_timeout_that_is_no_time_is_refused_at_parse_time(
    capsys: pytest.CaptureFixture[str], value: str
) -> None:
    code, out, err = _run(
        ["lint", "--platform", "h200", "--engine", "vllm", "--engine-timeout", value, "x.yaml"],
        capsys,
    )
    assert (code, out) == (2, "")
    assert "--engine-timeout" in err and err.count("\n") == 1
