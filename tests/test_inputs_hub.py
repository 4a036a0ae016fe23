"""Hugging Face ids through the real huggingface_hub client, against a local Hub.

``tests/hub_server.py`` serves the Hub's file endpoints on 127.0.0.1; each case runs
``kvconfig.load.hub.resolve`` in a fresh process (the client reads ``HF_ENDPOINT``,
``HF_HUB_CACHE``, ``HF_HUB_OFFLINE`` and ``HF_TOKEN`` when it is imported). Nothing
reaches the network.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kvconfig.errors import InputError
from kvconfig.load import hub
from tests.hub_server import Hub, Repo, commit_of, config_bytes, serve

pytest.importorskip("huggingface_hub")

ROOT = Path(__file__).resolve().parent.parent
TARGET = config_bytes(str(ROOT / "examples/models/qwen3-8b/config.json"))
DRAFT = config_bytes(str(ROOT / "examples/models/qwen3-8b-eagle3-angelslim/config.json"))


@pytest.fixture(scope="module")
def local_hub() -> Iterator[tuple[str, Hub]]:
    state = Hub(
        {
            "Qwen/Qwen3-8B": Repo({"main": {"config.json": TARGET}, "v2": {"config.json": TARGET}}),
            "AngelSlim/Qwen3-8B_eagle3": Repo({"main": {"config.json": DRAFT}}),
            "meta-llama/Llama-Gated": Repo({"main": {"config.json": TARGET}}, gated=True),
            "org/no-config": Repo({"main": {"README.md": b"hi"}}),
            "slow/model": Repo({"main": {"config.json": TARGET}}, delay=6),
        }
    )
    with serve(state) as url:
        yield url, state


def _resolve(
    url: str, cache: Path, repo: str, revision: str | None = None, **env: str
) -> tuple[str, str]:
    """(folder, '') or ('', error line) of ``hub.resolve`` in a fresh process."""
    code = (
        "import json, sys\n"
        "from kvconfig.errors import InputError\n"
        "from kvconfig.load.hub import resolve\n"
        "try:\n"
        f"    print(json.dumps([str(resolve({repo!r}, revision={revision!r}, source='d.yaml',"
        " line=4)), '']))\n"
        "except InputError as err:\n"
        "    print(json.dumps(['', str(err)]))\n"
    )
    full = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("HF_", "KVCONFIG_"))},
        "HF_ENDPOINT": url,
        "HF_HUB_CACHE": str(cache),
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "NO_PROXY": "127.0.0.1",
        "PYTHONPATH": str(ROOT),
        **env,
    }
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    folder, error = json.loads(proc.stdout.strip().splitlines()[-1])
    return folder, error


def test_download_then_read_from_the_cache(local_hub: tuple[str, Hub], tmp_path: Path) -> None:
    url, state = local_hub
    folder, error = _resolve(url, tmp_path, "Qwen/Qwen3-8B", KVCONFIG_DOWNLOAD="1")
    assert error == ""
    assert Path(folder) == tmp_path / "models--Qwen--Qwen3-8B" / "snapshots" / commit_of("main")
    assert (Path(folder) / "config.json").read_bytes() == TARGET
    assert not any(p.name != "config.json" for p in Path(folder).iterdir())  # only config.json
    seen = len(state.requests)
    # a cache hit: no request, no download flag needed, and huggingface_hub not imported
    folder2, error = _resolve(url, tmp_path, "Qwen/Qwen3-8B")
    assert (folder2, error) == (folder, "")
    assert len(state.requests) == seen


def test_the_drafter_and_a_revision(local_hub: tuple[str, Hub], tmp_path: Path) -> None:
    url, _ = local_hub
    folder, error = _resolve(url, tmp_path, "AngelSlim/Qwen3-8B_eagle3", KVCONFIG_DOWNLOAD="1")
    assert error == "" and (Path(folder) / "config.json").read_bytes() == DRAFT
    folder, error = _resolve(url, tmp_path, "Qwen/Qwen3-8B", "v2", KVCONFIG_DOWNLOAD="1")
    assert error == "" and Path(folder).name == commit_of("v2")


def test_the_token_is_sent_for_gated_repositories(
    local_hub: tuple[str, Hub], tmp_path: Path
) -> None:
    url, state = local_hub
    _, error = _resolve(
        url, tmp_path, "meta-llama/Llama-Gated", KVCONFIG_DOWNLOAD="1", HF_TOKEN="hf_test"
    )
    assert error == "", error
    assert (
        "HEAD",
        "/meta-llama/Llama-Gated/resolve/main/config.json",
        "Bearer hf_test",
    ) in state.requests


ERRORS = {
    "not cached": (
        "Qwen/Qwen3-8B",
        None,
        {},
        "d.yaml:4: model: 'Qwen/Qwen3-8B' is not in the Hugging Face cache ({cache}) (pass "
        "--download (or set KVCONFIG_DOWNLOAD=1) to fetch its config.json, or map it to a local "
        "folder with --model-path)",
    ),
    "offline": (
        "Qwen/Qwen3-8B",
        None,
        {"KVCONFIG_DOWNLOAD": "1", "HF_HUB_OFFLINE": "1"},
        "d.yaml:4: model: 'Qwen/Qwen3-8B' is not in the Hugging Face cache, and HF_HUB_OFFLINE=1 "
        "forbids downloads (unset HF_HUB_OFFLINE to download its config.json, or map it to a "
        "local folder with --model-path)",
    ),
    "gated": (
        "meta-llama/Llama-Gated",
        None,
        {"KVCONFIG_DOWNLOAD": "1"},
        "d.yaml:4: model: 'meta-llama/Llama-Gated' is gated on the Hub: its files need an "
        "accepted licence and a token (accept its terms at {url}/meta-llama/Llama-Gated and set "
        "HF_TOKEN to a token of that account, or map it to a local folder with --model-path)",
    ),
    "missing": (
        "nobody/nothing",
        None,
        {"KVCONFIG_DOWNLOAD": "1"},
        "d.yaml:4: model: 'nobody/nothing' does not exist on the Hub, or is private (check the "
        "id; for a private repository set HF_TOKEN to a token that can read it)",
    ),
    "no such revision": (
        "Qwen/Qwen3-8B",
        "v9",
        {"KVCONFIG_DOWNLOAD": "1"},
        "d.yaml:4: model: 'Qwen/Qwen3-8B' has no revision 'v9' on the Hub (check --revision (a "
        "branch, tag or commit of the repository))",
    ),
    "no config.json": (
        "org/no-config",
        None,
        {"KVCONFIG_DOWNLOAD": "1"},
        "d.yaml:4: model: 'org/no-config' has no config.json (kvconfig reads a model's "
        "config.json: point it at a repository that has one)",
    ),
    "timeout": (
        "slow/model",
        None,
        {"KVCONFIG_DOWNLOAD": "1", "HF_HUB_ETAG_TIMEOUT": "1", "KVCONFIG_HUB_TIMEOUT": "2"},
        "d.yaml:4: model: the Hub at {url} did not answer within 2 s for 'slow/model' (retry, "
        "raise KVCONFIG_HUB_TIMEOUT (seconds), or set HF_ENDPOINT to a reachable mirror)",
    ),
}


@pytest.mark.parametrize("name", ERRORS, ids=ERRORS.keys())
def test_failures_are_one_line_saying_what_to_do(
    name: str, local_hub: tuple[str, Hub], tmp_path: Path
) -> None:
    url, _ = local_hub
    repo, revision, env, want = ERRORS[name]
    folder, error = _resolve(url, tmp_path, repo, revision, **env)
    assert folder == ""
    assert error == want.format(url=url, cache=tmp_path)


def test_no_network_is_one_line(tmp_path: Path) -> None:
    # a port nothing listens on
    folder, error = _resolve("http://127.0.0.1:9", tmp_path, "Qwen/Qwen3-8B", KVCONFIG_DOWNLOAD="1")
    assert folder == ""
    assert error == (
        "d.yaml:4: model: cannot reach the Hub at http://127.0.0.1:9 to fetch 'Qwen/Qwen3-8B' "
        "(check the network or HF_ENDPOINT, or map the model to a local folder with --model-path)"
    )


def test_the_cache_reader_agrees_with_the_client(
    local_hub: tuple[str, Hub], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _ = local_hub
    _resolve(url, tmp_path, "Qwen/Qwen3-8B", KVCONFIG_DOWNLOAD="1")
    _resolve(url, tmp_path, "Qwen/Qwen3-8B", "v2", KVCONFIG_DOWNLOAD="1")
    from huggingface_hub import try_to_load_from_cache

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    for revision in (None, "main", "v2", "v3", commit_of("v2")):
        client = try_to_load_from_cache(
            "Qwen/Qwen3-8B", "config.json", cache_dir=tmp_path, revision=revision
        )
        ours = hub.cached_config("Qwen/Qwen3-8B", revision)
        assert (str(ours) if ours else None) == (client if isinstance(client, str) else None)


@pytest.mark.parametrize(
    ("env", "want"),
    [
        ({"HF_HUB_CACHE": "/a/hub"}, "/a/hub"),
        ({"HF_HOME": "/b"}, "/b/hub"),
        ({"HUGGINGFACE_HUB_CACHE": "/c"}, "/c"),
        ({"XDG_CACHE_HOME": "/x"}, "/x/huggingface/hub"),
        ({"HF_HOME": "/b", "HF_HUB_CACHE": "/a"}, "/a"),
    ],
)
def test_the_cache_folder_follows_the_clients_rules(
    env: dict[str, str], want: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HF_HUB_CACHE", "HF_HOME", "HUGGINGFACE_HUB_CACHE", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert hub.cache_dir() == Path(want)


def test_reading_the_cache_does_not_import_huggingface_hub(tmp_path: Path) -> None:
    snapshot = tmp_path / "models--Qwen--Qwen3-8B" / "snapshots" / ("a" * 40)
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_bytes(TARGET)
    (tmp_path / "models--Qwen--Qwen3-8B" / "refs").mkdir()
    (tmp_path / "models--Qwen--Qwen3-8B" / "refs" / "main").write_text("a" * 40)
    code = (
        "import sys\nfrom kvconfig.load.hub import resolve\n"
        "print(resolve('Qwen/Qwen3-8B'))\nprint('huggingface_hub' in sys.modules)\n"
    )
    env = {**os.environ, "HF_HUB_CACHE": str(tmp_path), "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.split()
    assert out == [str(snapshot), "False"]


@pytest.mark.parametrize(
    ("value", "is_id"),
    [("Qwen/Qwen3-8B", True), ("AngelSlim/Qwen3-8B_eagle3", True), ("/mnt/models/x", False),
     ("./models/qwen3-8b", False), ("models/../x", False), ("gpt2", True), ("a/b/c", False),
     ("config-model", True), ("8", False), ("x.", False)],
)  # fmt: skip
def test_what_counts_as_an_id(value: str, is_id: bool) -> None:
    assert hub.is_hub_id(value) is is_id


def test_model_path_rules() -> None:
    rules = hub.ModelPaths.parse(
        ["/mnt/models=/srv/models", "/mnt/models/special=/opt/s", "Qwen/Qwen3-8B=/m/q"], Path("/w")
    )
    assert rules.map("/mnt/models") == Path("/srv/models")
    assert rules.map("/mnt/models/qwen3-8b") == Path("/srv/models/qwen3-8b")
    assert rules.map("/mnt/models/special/x") == Path("/opt/s/x")
    assert rules.map("/mnt/modelsX") is None
    assert rules.map("Qwen/Qwen3-8B") == Path("/m/q")
    assert hub.ModelPaths.parse(["/m=rel"], Path("/w")).map("/m/a") == Path("/w/rel/a")
    with pytest.raises(InputError, match=r"--model-path: expected PATTERN=DIR, got '/mnt/models'"):
        hub.ModelPaths.parse(["/mnt/models"])
