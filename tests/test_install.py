"""A clean install of the built wheel adds one name to site-packages, ``kvconfig``, and
vLLM's own plugin loader finds its hooks there.

The wheel is built from a copy of the checkout's packaged files (so no ``build/`` is left
in the repository) and installed without dependencies into a fresh virtualenv; the
plugin check runs this environment's vLLM (``vllm.plugins.load_plugins_by_group``) with
that virtualenv's site-packages first on ``sys.path``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def site_packages(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, set[str]]:
    """The clean virtualenv's site-packages after the install, and what it held before."""
    tmp = tmp_path_factory.mktemp("install")
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for folder in ("kvconfig", "hooks", "schemas"):
        shutil.copytree(ROOT / folder, src / folder, symlinks=True, ignore=ignore)
    wheels = tmp / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "-w", str(wheels), str(src)],
        cwd=tmp, check=True, capture_output=True,
    )  # fmt: skip
    [wheel] = wheels.glob("kvconfig-*.whl")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    [sp] = venv.glob("lib/python*/site-packages")
    before = set(os.listdir(sp))
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
         "-q", "--no-deps", "--no-index", str(wheel)],
        check=True, capture_output=True,
    )  # fmt: skip
    return sp, before


def test_only_kvconfig_is_added_at_the_top_level(site_packages: tuple[Path, set[str]]) -> None:
    sp, before = site_packages
    added = set(os.listdir(sp)) - before
    assert added == {"kvconfig", "kvconfig-0.1.0.dist-info"}, added
    package = sp / "kvconfig"
    for module in ("hooks/__init__.py", "hooks/_connectors/__init__.py", "hooks/py.typed",
                   "schemas/__init__.py", "schemas/deployment.py", "schemas/py.typed"):  # fmt: skip
        path = package / module
        assert path.is_file() and not path.is_symlink(), module
    entry_points = (sp / "kvconfig-0.1.0.dist-info" / "entry_points.txt").read_text()
    assert "kvconfig = kvconfig.hooks:register" in entry_points


PROBE = """
import importlib.metadata as md, json, sys
import vllm.plugins as plugins
found = [(e.name, e.value) for e in md.entry_points(group="vllm.general_plugins")]
loaded = plugins.load_plugins_by_group("vllm.general_plugins")
import kvconfig, kvconfig.hooks
plugins.load_general_plugins()
print("RESULT " + json.dumps({
    "found": found,
    "loaded": sorted(loaded),
    "is_register": loaded.get("kvconfig") is kvconfig.hooks.register,
    "kvconfig": kvconfig.__file__,
    "hooks": kvconfig.hooks.__file__,
    "active": kvconfig.hooks.status().active,
    "top_level": sorted(m for m in ("hooks", "schemas") if m in sys.modules),
}))
"""


@pytest.mark.vllm
def test_vllms_plugin_loader_finds_and_loads_the_hooks(
    site_packages: tuple[Path, set[str]], tmp_path: Path
) -> None:
    pytest.importorskip("vllm")
    sp, _ = site_packages
    env = {**os.environ, "PYTHONPATH": str(sp), "KVCONFIG_MODE": "enforce"}
    env.pop("VLLM_PLUGINS", None)
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=tmp_path,  # not the checkout: only the installed wheel provides kvconfig
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    lines = [x for x in out.stdout.splitlines() if x.startswith("RESULT ")]
    assert out.returncode == 0 and lines, out.stderr[-3000:]
    seen = json.loads(lines[-1].removeprefix("RESULT "))
    assert ("kvconfig", "kvconfig.hooks:register") in [tuple(f) for f in seen["found"]]
    assert "kvconfig" in seen["loaded"] and seen["is_register"]
    assert seen["kvconfig"] == str(sp / "kvconfig" / "__init__.py")
    assert seen["hooks"] == str(sp / "kvconfig" / "hooks" / "__init__.py")
    assert seen["active"] is True  # load_general_plugins ran register(): the hooks are on
    assert seen["top_level"] == []  # nothing imported the old top-level names
