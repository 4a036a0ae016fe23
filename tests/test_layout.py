"""The tree reads as its architecture: packages depend downwards, no import cycles, no
module too long to read, and the vLLM mirrors say which vLLM file they mirror."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("kvconfig", "hooks", "schemas", "tools")
#: The folders installed under kvconfig's name (kvconfig/hooks and kvconfig/schemas link
#: to them; ``rglob`` does not follow those links, so each file is listed once).
INSTALLED_AS = {"hooks": "kvconfig.hooks", "schemas": "kvconfig.schemas"}
MAX_LINES = 400

#: What each part of kvconfig may import, besides itself, the standard library and
#: kvconfig's small shared modules (errors, codes, _suggest). Lower layers never import
#: higher ones: mirror < derive < load < plan < report < cli.
MAY_IMPORT = {
    "kvconfig.mirror": {"kvconfig.schemas"},
    "kvconfig.derive": {"kvconfig.mirror", "kvconfig.schemas"},
    "kvconfig.load": {"kvconfig.derive", "kvconfig.mirror", "kvconfig.schemas"},
    "kvconfig.plan": {"kvconfig.load", "kvconfig.mirror", "kvconfig.schemas"},
    "kvconfig.report": {"kvconfig.load", "kvconfig.mirror", "kvconfig.plan", "kvconfig.schemas"},
    "kvconfig.schemas": {"kvconfig.mirror.versions", "kvconfig.mirror.speculative"},
}
SHARED = {"kvconfig.errors", "kvconfig.codes", "kvconfig._suggest", "kvconfig.secrets"}


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            top, _, rest = name.partition(".")
            if top in INSTALLED_AS:
                name = INSTALLED_AS[top] + (f".{rest}" if rest else "")
            found[name] = path
    return found


MODULES = _modules()


def _imports(path: Path) -> Iterator[str]:
    """Every project module ``path`` imports, at the top or inside a function."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name in MODULES)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            subs = [f"{node.module}.{a.name}" for a in node.names]
            named = [s for s in subs if s in MODULES]
            yield from named
            if len(named) < len(subs) and node.module in MODULES:
                yield node.module


GRAPH = {m: {d for d in _imports(p) if d != m} for m, p in MODULES.items()}


def _part(module: str) -> str:
    if module.startswith("kvconfig."):
        return ".".join(module.split(".")[:2])
    return module.split(".", maxsplit=1)[0]


def test_no_import_cycles() -> None:
    cycles = []
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(GRAPH):
        if module not in index:
            visit(module)
    assert cycles == []


@pytest.mark.parametrize("part", sorted(MAY_IMPORT))
def test_parts_depend_downwards(part: str) -> None:
    allowed = MAY_IMPORT[part] | SHARED
    wrong = sorted(
        f"{m} imports {d}"
        for m, deps in GRAPH.items()
        if _part(m) == part
        for d in deps
        if _part(d) != part and d not in allowed and _part(d) not in allowed
    )
    assert wrong == []


def test_the_package_never_imports_the_developer_tools() -> None:
    wrong = [
        m
        for m, deps in GRAPH.items()
        if not m.startswith("tools") and any(d.startswith("tools") for d in deps)
    ]
    assert wrong == []


def test_nothing_in_kvconfig_imports_the_hooks() -> None:
    wrong = [
        m
        for m, deps in GRAPH.items()
        if m.startswith("kvconfig")
        and _part(m) != "kvconfig.hooks"
        and "kvconfig.hooks" in {_part(d) for d in deps}
    ]
    assert wrong == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_is_too_long_to_read(module: str) -> None:
    lines = MODULES[module].read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, f"{module}: {lines} lines"


MIRRORS = sorted(m for m in MODULES if m.startswith("kvconfig.mirror.") and m != "kvconfig.mirror")


@pytest.mark.parametrize("module", [m for m in MIRRORS if m != "kvconfig.mirror.versions"])
def test_each_mirror_names_the_vllm_source_it_mirrors(module: str) -> None:
    doc = ast.get_docstring(ast.parse(MODULES[module].read_text(encoding="utf-8"))) or ""
    assert re.search(r"vllm/[\w/.*]+", doc), f"{module}'s docstring names no vLLM file"


def test_the_catalog_generator_is_not_in_the_package() -> None:
    assert not (ROOT / "kvconfig" / "introspect").exists()
    assert not any(m.startswith("kvconfig.tools") for m in MODULES)
