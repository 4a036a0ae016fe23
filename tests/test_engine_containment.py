"""The engine mode is contained (docs/security.md): no code from a linted repository runs
unless kvconfig's own command line says so, the child's environment is an allowlist, and
nothing is left behind (process or file) after a run.

The vLLM cases run vLLM 0.33.0's real import and start-up in engine children: a model
folder whose ``config.json`` names a hostile ``configuration_*.py`` through ``auto_map``,
a ``PYTHONPATH`` with a ``sitecustomize.py``, and a census of processes and files (with
``strace`` on the whole process tree) around a ``kvconfig plan --engine vllm`` run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kvconfig import engine
from kvconfig.engine.pool import Gpu, Request, child_env, plan_variable, processes_of
from kvconfig.errors import InputError
from kvconfig.load.platforms import parse_platform
from tests.conftest import EXAMPLES, HAS_VLLM

ROOT = Path(__file__).resolve().parents[1]
QWEN3 = EXAMPLES / "models" / "qwen3-8b"
H100 = Gpu("NVIDIA H100 80GB HBM3", (9, 0), 80 << 30)

needs_vllm = pytest.mark.skipif(not HAS_VLLM, reason="needs vllm")


# ------------------------------------------------------------------ the environment


@pytest.mark.parametrize(
    ("name", "value", "passed"),
    [
        ("VLLM_USE_V2_MODEL_RUNNER", "0", True),
        ("VLLM_KV_CACHE_LAYOUT", "HND", True),
        ("VLLM_MLA_DISABLE", "1", True),
        ("CUDA_VISIBLE_DEVICES", "0,1", True),
        ("PYTHONHASHSEED", "42", True),
        ("PYTHONHASHSEED", "/tmp/evil", False),
        ("LD_PRELOAD", "/tmp/evil.so", False),
        ("LD_LIBRARY_PATH", "/tmp", False),
        ("PYTHONPATH", "/tmp/evil", False),
        ("PYTHONHOME", "/tmp/evil", False),
        ("PYTHONSTARTUP", "/tmp/evil.py", False),
        ("HOME", "/tmp/evil", False),
        ("HTTPS_PROXY", "http://evil:3128", False),
        ("HF_TOKEN", "hf_secret", False),
        ("KVCONFIG_PLAN_EXPORT", "/etc/kvconfig.json", False),
        ("VLLM_LOGGING_CONFIG_PATH", "/tmp/logging.json", False),
        ("VLLM_CUDART_SO_PATH", "/tmp/evil.so", False),
        ("VLLM_CACHE_ROOT", "/tmp/evil", False),
        ("VLLM_RPC_BASE_PATH", "/tmp", False),
        ("VLLM_NIXL_SIDE_CHANNEL_HOST", "10.0.0.1", False),
        ("VLLM_SOME_NEW_SETTING", "../../evil", False),
    ],
)
def test_only_plan_variables_pass(name: str, value: str, passed: bool) -> None:
    assert plan_variable(name, value) is passed


def test_every_variable_that_changes_the_plan_reaches_vllm() -> None:
    from kvconfig.load.checks import PLAN_ENV

    # VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE ends like a cache folder's name
    assert [name for name in PLAN_ENV if not plan_variable(name, "1")] == []


def test_a_child_environment_is_an_allowlist_with_every_folder_in_scratch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", "/tmp/evil")
    monkeypatch.setenv("LD_PRELOAD", "/tmp/evil.so")
    monkeypatch.setenv("HF_TOKEN", "hf_caller_secret")
    monkeypatch.setenv("VLLM_USE_V2_MODEL_RUNNER", "0")
    hostile = {
        "LD_PRELOAD": "/tmp/evil.so",
        "PYTHONPATH": "/tmp/evil",
        "HOME": "/tmp/evil",
        "TMPDIR": "/tmp/evil",
        "KVCONFIG_PLAN_EXPORT": "/tmp/evil.json",
        "VLLM_KV_CACHE_LAYOUT": "HND",
    }
    request = Request(
        ("m",), "/", H100, env=hostile, settings={"KVCONFIG_PLAN_EXPORT": "/x/p.json"}
    )
    env = child_env(request, tmp_path)
    assert not [k for k in env if k.startswith(("LD_", "PYTHON"))]
    # vLLM's prefix-cache hash seed passes; the isolated interpreter does not use it itself
    seeded = child_env(Request(("m",), "/", H100, env={"PYTHONHASHSEED": "42"}), tmp_path)
    assert seeded["PYTHONHASHSEED"] == "42"
    assert "HF_TOKEN" not in env and "VLLM_USE_V2_MODEL_RUNNER" not in env
    assert env["VLLM_KV_CACHE_LAYOUT"] == "HND"
    assert env["KVCONFIG_PLAN_EXPORT"] == "/x/p.json"
    assert env["HF_HUB_OFFLINE"] == env["TRANSFORMERS_OFFLINE"] == "1"
    assert env["HTTPS_PROXY"] == "http://127.0.0.1:9"
    folders = (
        "HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME",
        "XDG_RUNTIME_DIR", "TMPDIR", "VLLM_CACHE_ROOT", "VLLM_CONFIG_ROOT", "TRITON_HOME",
        "TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "TORCH_EXTENSIONS_DIR",
        "FLASHINFER_WORKSPACE_BASE", "CUDA_CACHE_PATH", "HF_HOME",
    )  # fmt: skip
    for name in folders:
        assert Path(env[name]).is_relative_to(tmp_path), name
        assert Path(env[name]).is_dir(), name
    downloading = child_env(Request(("m",), "/", H100, download=True), tmp_path)
    assert downloading["HF_TOKEN"] == "hf_caller_secret"
    assert "HF_HUB_OFFLINE" not in downloading and "HTTPS_PROXY" not in downloading


# ------------------------------------------------------------------ hostile repository

EVIL_CONFIG = """
from pathlib import Path
Path({marker!r}).write_text("ran")
from transformers import PretrainedConfig

class EvilConfig(PretrainedConfig):
    model_type = {model_type!r}
"""


def _hostile_model(folder: Path, marker: Path, model_type: str) -> Path:
    """A copy of Qwen3-8B's config whose ``auto_map`` names a configuration file that
    writes ``marker`` when imported."""
    folder.mkdir(parents=True)
    config = json.loads((QWEN3 / "config.json").read_text())
    config["auto_map"] = {"AutoConfig": "configuration_evil.EvilConfig"}
    config["model_type"] = model_type
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "configuration_evil.py").write_text(
        EVIL_CONFIG.format(marker=str(marker), model_type=model_type)
    )
    return folder


def _serve_config(folder: Path, model: Path, **extra: Any) -> Path:
    path = folder / "serve.yaml"
    lines = [f"model: {model}", "trust-remote-code: true"]
    lines += [f"{k}: {v}" for k, v in extra.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


@needs_vllm
@pytest.mark.vllm
def test_a_hostile_auto_map_never_runs_without_trust_remote_code(
    tmp_path: Path,
) -> None:
    known = tmp_path / "known.marker"
    unknown = tmp_path / "unknown.marker"
    trusted = tmp_path / "trusted.marker"
    h100 = parse_platform("h100")
    targets = [
        engine.serve_config_target(
            str(
                _serve_config(tmp_path / "a", _hostile_model(tmp_path / "a" / "m", known, "qwen3"))
            ),
            h100,
        ),
        engine.serve_config_target(
            str(
                _serve_config(
                    tmp_path / "b", _hostile_model(tmp_path / "b" / "m", unknown, "evil-arch")
                )
            ),
            h100,
        ),
    ]
    plan, refused = engine.plans(targets)
    # vLLM's own Qwen3 classes built the model: the plan stands, with KV901
    assert not isinstance(plan, Exception), plan
    codes = [f.code.value for f in plan.findings]
    assert "KV901" in codes
    assert plan.groups and plan.groups[0].block_size > 0
    # a model type only the folder's code knows: one clear input error
    assert isinstance(refused, InputError)
    assert "--trust-remote-code" in str(refused) and "\n" not in str(refused)
    assert not known.exists() and not unknown.exists()
    # the same hostile folder with kvconfig's --trust-remote-code: its code does run (so
    # the markers above could have been written)
    target = engine.serve_config_target(
        str(_serve_config(tmp_path / "c", _hostile_model(tmp_path / "c" / "m", trusted, "qwen3"))),
        h100,
    )
    engine.plans([target], trust_remote_code=True)
    assert trusted.read_text() == "ran"


SITECUSTOMIZE = """
import os, sys
with open({marker!r}, "a") as fh:
    fh.write(f"{{os.getpid()}} {{sys.argv!r}}\\n")
"""


@needs_vllm
@pytest.mark.vllm
def test_a_sitecustomize_on_pythonpath_never_runs_in_the_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    evil = tmp_path / "evil"
    evil.mkdir()
    marker = tmp_path / "sitecustomize.marker"
    (evil / "sitecustomize.py").write_text(SITECUSTOMIZE.format(marker=str(marker)))
    (evil / "usercustomize.py").write_text(SITECUSTOMIZE.format(marker=str(marker)))
    # the hostile folder works: a Python that honours PYTHONPATH runs it
    subprocess.run(
        [sys.executable, "-c", "pass"], env={**os.environ, "PYTHONPATH": str(evil)}, check=True
    )
    assert marker.exists()
    marker.unlink()
    monkeypatch.setenv("PYTHONPATH", str(evil))
    monkeypatch.setenv("PYTHONSTARTUP", str(evil / "sitecustomize.py"))
    target = engine.Target(
        source="<command>",
        argv=(str(QWEN3), "--block-size", "32"),
        cwd=str(tmp_path),
        platform=parse_platform("h100"),
        env={"PYTHONPATH": str(evil), "LD_PRELOAD": str(evil / "missing.so")},
    )
    (plan,) = engine.plans([target])
    assert not isinstance(plan, Exception), plan
    assert plan.groups[0].block_size == 32
    assert not marker.exists()
    (dropped,) = [f for f in plan.findings if f.code.value == "KV902"]
    assert "LD_PRELOAD" in dropped.message and "PYTHONPATH" in dropped.message
    assert str(evil) not in dropped.message


# ------------------------------------------------------------------ census

#: System calls that create, write, move or link a file, or open a connection.
TRACED = (
    "open,openat,creat,mkdir,mkdirat,rename,renameat,renameat2,link,linkat,symlink,symlinkat,"
    "connect"
)
WRITE = re.compile(r"O_WRONLY|O_RDWR|O_CREAT")


def _tree(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def _written(log: Path) -> tuple[set[str], list[str]]:
    """Paths the traced processes created or opened for writing, and their connections."""
    paths: set[str] = set()
    connects: list[str] = []
    for line in log.read_text(errors="replace").splitlines():
        call = re.match(r"\d+\s+(\w+)\((.*)", line)
        if call is None or "= -1" in line:
            continue
        name, rest = call.groups()
        if name == "connect":
            connects.append(rest)
            continue
        if name in ("open", "openat", "creat") and name != "creat" and not WRITE.search(rest):
            continue
        for quoted in re.findall(r'"((?:[^"\\]|\\.)*)"', rest):
            paths.add(quoted)
    return paths, connects


@needs_vllm
@pytest.mark.vllm
def test_nothing_is_left_behind_and_nothing_written_outside_scratch(
    tmp_path: Path,
) -> None:
    """``kvconfig plan --engine vllm`` under ``strace -f``: its whole process tree writes
    only inside its temporary folder (the engine scratch), connects to nothing but local
    sockets, and leaves no process, no file in HOME or the temporary folder, and no scratch
    folder."""
    strace = shutil.which("strace")
    if strace is None:
        if os.environ.get("CI"):
            pytest.fail("CI needs strace for the engine census (apt-get install strace)")
        pytest.skip("needs strace")
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    (home / ".cache").mkdir(parents=True)
    (home / ".cache" / "kept").write_text("x")
    tmp.mkdir()
    config = tmp_path / "serve.yaml"
    config.write_text(f"model: {QWEN3}\nblock-size: 32\n")
    before_home = _tree(home)
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "TMPDIR": str(tmp)}
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # the caller's own choice; the child always -B
    log = tmp_path / "strace.log"
    done = subprocess.run(
        [
            strace,
            "-f",
            "-qq",
            "--seccomp-bpf",
            "-e",
            f"trace={TRACED}",
            "-o",
            str(log),
            sys.executable,
            "-m",
            "kvconfig",
            "plan",
            "--engine",
            "vllm",
            "--platform",
            "h100",
            "--format",
            "json",
            str(config),
        ],
        check=False,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert plan["groups"][0]["block_size"] == 32
    # no process: nothing carries the run's temporary folder in its environment
    assert processes_of(tmp) == []
    # no file: HOME as it was, the temporary folder (the scratch's parent) empty
    assert _tree(home) == before_home
    assert _tree(tmp) == set()
    written, connects = _written(log)
    outside = sorted(
        p
        for p in written
        if not Path(p).is_relative_to(tmp) and not p.startswith(("/dev/", "/proc/"))
    )
    assert outside == []
    remote = [c for c in connects if "AF_UNIX" not in c and "AF_NETLINK" not in c]
    remote = [c for c in remote if not re.search(r"127\.0\.0\.1|::1|inet_addr\(\"0\.0\.0\.0", c)]
    assert remote == []


@needs_vllm
@pytest.mark.vllm
def test_a_fleets_engine_mode_contains_a_hostile_auto_map_too(tmp_path: Path) -> None:
    """``kvconfig lint --fleet --engine vllm`` applies the same rule as single-engine mode:
    the folder's code never runs unless kvconfig's own ``--trust-remote-code`` says so,
    and the engine's plan carries KV901."""
    from kvconfig.fleet import fleet_document

    def fleet(name: str, marker: Path) -> str:
        model = _hostile_model(tmp_path / name / "m", marker, "qwen3")
        path = tmp_path / name / "fleet.yaml"
        path.write_text(
            "kvconfig_fleet: 1\nname: hostile\nplatform: h100\nengines:\n"
            "  - name: both\n    role: both\n"
            f"    command: vllm serve {model} --trust-remote-code --block-size 64\n"
            "    kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_both}\n"
        )
        return str(path)

    contained = tmp_path / "contained.marker"
    doc = fleet_document([fleet("a", contained)], engine="vllm")
    assert not contained.exists()
    (body,) = doc["engines"]
    assert "KV901" in [f["code"] for f in body["plan"]["findings"]]
    assert body["plan"]["groups"] and body["plan"]["groups"][0]["block_size"] == 64
    trusted = tmp_path / "trusted.marker"
    fleet_document([fleet("b", trusted)], engine="vllm", trust_remote_code=True)
    assert trusted.read_text() == "ran"


@needs_vllm
def test_a_fleets_engine_mode_leaves_no_folder_when_it_fails_early(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The peers' folder is made inside the clean-up: a failure while the requests are
    built (here: one request raises) removes it too."""
    import tempfile

    from kvconfig.fleet import engine_mode, read
    from kvconfig.fleet import planner as P

    fleet = read.read([str(EXAMPLES / "fleets" / "correct-pd.yaml")])
    engines, _ = P.plan_engines(fleet, P.Planner())

    def failing(e: Any, peers_file: str) -> Any:
        assert Path(peers_file).is_relative_to(tmp_path)
        raise RuntimeError("request failed")

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(engine_mode, "request", failing)
    with pytest.raises(RuntimeError, match="request failed"):
        engine_mode.with_vllm(engines)
    assert list(tmp_path.iterdir()) == []
