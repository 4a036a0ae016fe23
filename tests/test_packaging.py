"""What the wheel holds and what installing it asks of pip.

* The ``vllm`` extra accepts every vLLM release the hooks support and pins none, so
  ``pip install 'kvconfig[vllm]'`` never replaces a user's vLLM of a supported release;
  the test environment pins its vLLM through the ``test-vllm`` extra instead.
* The catalog generator (``tools/``) is a developer tool: the package finder leaves it
  out of the wheel, and nothing in the shipped packages imports it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
#: The repository's folders of the wheel's packages (hooks/ and schemas/ install as
#: kvconfig.hooks and kvconfig.schemas).
SHIPPED = ("kvconfig", "hooks", "schemas")

tomllib = pytest.importorskip("tomllib")


def _project() -> dict[str, object]:
    doc = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert isinstance(doc, dict)
    return doc


def _extra(name: str) -> list[Requirement]:
    project = _project()["project"]
    assert isinstance(project, dict)
    return [Requirement(r) for r in project["optional-dependencies"][name]]


def test_the_vllm_extra_accepts_every_supported_release_and_pins_none() -> None:
    from kvconfig.hooks import SUPPORTED_VLLM_VERSIONS

    (req,) = _extra("vllm")
    assert req.name == "vllm"
    for version in SUPPORTED_VLLM_VERSIONS:
        assert Version(version) in req.specifier, (version, str(req.specifier))
    assert not any(spec.operator in ("==", "===") for spec in req.specifier), str(req)
    # a later patch release of a supported minor version is accepted too
    patch = Version(SUPPORTED_VLLM_VERSIONS[-1])
    assert Version(f"{patch.major}.{patch.minor}.{patch.micro + 1}") in req.specifier


def test_the_test_environment_pins_the_vllm_the_tests_are_written_for() -> None:
    from kvconfig.hooks import SUPPORTED_VLLM_VERSIONS

    (req,) = _extra("test-vllm")
    assert str(req) == f"vllm=={SUPPORTED_VLLM_VERSIONS[-1]}"
    run = (ROOT / "dev" / "run").read_text(encoding="utf-8")
    assert "[test,test-vllm]" in run


def test_the_wheel_leaves_the_developer_tools_out() -> None:
    from setuptools import find_packages

    tool = _project()["tool"]
    assert isinstance(tool, dict)
    found = tool["setuptools"]["packages"]["find"]
    packages = find_packages(str(ROOT), include=found["include"], exclude=found.get("exclude", ()))
    assert {p.split(".")[0] for p in packages} == {"kvconfig"}, packages
    assert {"kvconfig.hooks", "kvconfig.hooks._connectors", "kvconfig.schemas"} <= set(packages)
    assert not [p for p in packages if "introspect" in p or "catalog" in p.split(".")[1:2]]
    assert (ROOT / "tools" / "catalog" / "generate.py").is_file()
    data = tool["setuptools"]["package-data"]
    assert not any("introspect" in pattern for patterns in data.values() for pattern in patterns)


def test_no_shipped_module_imports_the_developer_tools() -> None:
    offenders = []
    for package in SHIPPED:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                names = (
                    [node.module or ""]
                    if isinstance(node, ast.ImportFrom)
                    else [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else []
                )
                offenders += [
                    f"{path.relative_to(ROOT)}: {n}"
                    for n in names
                    if n == "tools" or n.startswith("tools.")
                ]
    assert not offenders, offenders
