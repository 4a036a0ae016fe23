"""vLLM finds the hooks through the ``vllm.general_plugins`` entry point and honours
``VLLM_PLUGINS``; checked with vLLM's own plugin loader in a fresh process."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GROUP = "vllm.general_plugins"


def declared_entry_point() -> tuple[str, str]:
    """The (name, object) pyproject.toml declares in the vLLM plugin group."""
    tomllib = pytest.importorskip("tomllib")
    doc = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    ((name, value),) = doc["project"]["entry-points"][GROUP].items()
    return name, value


def installed() -> bool:
    try:
        dist = importlib.metadata.distribution("kvconfig")
    except importlib.metadata.PackageNotFoundError:
        return False
    # an install of this checkout (CI installs it editable), not of another copy or of
    # this checkout before its entry point changed
    _, value = declared_entry_point()
    return any(ep.group == GROUP and ep.value == value for ep in dist.entry_points)


@pytest.fixture
def plugin_path(tmp_path: Path) -> str:
    """``sys.path`` on which the ``kvconfig`` distribution and its entry point are found.

    The installed distribution when there is one; otherwise a dist-info written from
    pyproject.toml, the way an install would write it.
    """
    if installed():
        return str(ROOT)
    name, value = declared_entry_point()
    info = tmp_path / "kvconfig-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: kvconfig\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text(f"[{GROUP}]\n{name} = {value}\n")
    return os.pathsep.join([str(tmp_path), str(ROOT)])


def test_entry_point_is_hooks_register(plugin_path: str) -> None:
    name, value = declared_entry_point()
    assert (name, value) == ("kvconfig", "kvconfig.hooks:register")
    code = (
        "import importlib.metadata as m, json; "
        f"print(json.dumps([(e.name, e.value) for e in m.entry_points(group={GROUP!r})]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": plugin_path},
        capture_output=True,
        text=True,
        check=True,
    )
    assert ["kvconfig", "kvconfig.hooks:register"] in json.loads(out.stdout)


SCRIPT = """
import json, os
import vllm.plugins as plugins
from kvconfig import hooks
from kvconfig.hooks import _install

def wrapped():
    return sum(hasattr(v, _install.MARK) for _, v in
               (_install._resolve(t.module, t.owner, t.attr) for t in _install.TARGETS))

seen = {}
os.environ["VLLM_PLUGINS"] = "other"
plugins.load_general_plugins()
seen["other"] = [hooks.status().active, hooks.status().mode]

plugins.plugins_loaded = False  # as in a new process
os.environ["VLLM_PLUGINS"] = "kvconfig"
plugins.load_general_plugins()
s = hooks.status()
seen["kvconfig"] = [s.active, s.mode, wrapped()]

pid = os.fork()  # vLLM's default worker start: the patches come along
if pid == 0:
    plugins.load_general_plugins()
    hooks.register()
    os._exit(0 if hooks.status().active and wrapped() == len(_install.TARGETS) else 1)
seen["fork"] = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
print("RESULT " + json.dumps(seen))
"""


def test_vllm_loads_the_plugin_only_when_allowed(plugin_path: str) -> None:
    pytest.importorskip("vllm")
    env = {**os.environ, "PYTHONPATH": plugin_path}
    env.pop("KVCONFIG_MODE", None)
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    line = next(x for x in out.stdout.splitlines() if x.startswith("RESULT "))
    seen = json.loads(line.removeprefix("RESULT "))
    assert seen["other"] == [False, "off"]
    assert seen["kvconfig"] == [True, "enforce", 4]
    assert seen["fork"] == 0
