"""Coverage: every backend class the installed vLLM defines is in the shipped catalog.

Independent of the generator (which imports modules), this test reads vLLM's source
with ``ast``: every top-level class under ``vllm/v1/attention/backends``,
``vllm/models`` and ``vllm/model_executor`` whose bases resolve, through the
modules' imports, to ``vllm.v1.attention.backend.AttentionBackend``, plus the
named composites built by ``create_composite_attention_backend``. Modules that
cannot be imported on a CPU host are covered the same way, since nothing is
imported. Classes made inside functions (vLLM's dynamically created subclasses)
are not top-level and are left out, as in the catalog.
"""

from __future__ import annotations

import ast
import importlib.util
from functools import cache
from pathlib import Path

import pytest

from kvconfig.mirror.catalog import load_catalog

SPEC = importlib.util.find_spec("vllm")
pytestmark = [
    pytest.mark.vllm,
    pytest.mark.skipif(SPEC is None or SPEC.origin is None, reason="vllm is not installed"),
]

ROOTS = ("v1/attention/backends", "models", "model_executor")
BASE = "vllm.v1.attention.backend.AttentionBackend"
METHOD = "get_supported_kernel_block_sizes"


def _vllm_dir() -> Path:
    assert SPEC is not None and SPEC.origin is not None
    return Path(SPEC.origin).parent


@cache
def _module_file(module: str) -> Path | None:
    if module != "vllm" and not module.startswith("vllm."):
        return None  # bases from torch, abc, enum ... are not backends
    path = _vllm_dir().parent.joinpath(*module.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


@cache
def _tree(module: str) -> ast.Module:
    file = _module_file(module)
    if file is None:
        return ast.Module(body=[], type_ignores=[])
    return ast.parse(file.read_text(encoding="utf-8"))


@cache
def _symbols(module: str) -> dict[str, str | ast.ClassDef]:
    """Top-level names of a module: its classes, and what it imported under each name."""
    file = _module_file(module)
    if file is None:
        return {}
    tree = _tree(module)
    package = module if file.name == "__init__.py" else module.rsplit(".", 1)[0]
    table: dict[str, str | ast.ClassDef] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            table[node.name] = node
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            for alias in node.names:
                table[alias.asname or alias.name] = f"{base}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                table[alias.asname or alias.name.split(".")[0]] = (
                    alias.name if alias.asname else alias.name.split(".")[0]
                )
    return table


@cache
def _resolve(qualified: str, depth: int = 0) -> str | None:
    """The defining ``module.Class`` of a name, following re-exports."""
    if depth > 20 or "." not in qualified:
        return None
    module, name = qualified.rsplit(".", 1)
    symbol = _symbols(module).get(name)
    if isinstance(symbol, ast.ClassDef):
        return qualified
    if isinstance(symbol, str):
        return _resolve(symbol, depth + 1)
    if _module_file(qualified) is not None:
        return qualified  # a module, used as ``module.Class`` below
    return None


def _base_paths(module: str, node: ast.ClassDef) -> list[str]:
    out = []
    for base in node.bases:
        text = ast.unparse(base)
        head, _, tail = text.partition(".")
        symbol = _symbols(module).get(head)
        if isinstance(symbol, ast.ClassDef):
            target: str | None = f"{module}.{head}"
        elif isinstance(symbol, str):
            target = _resolve(symbol + (f".{tail}" if tail else ""))
        else:
            target = None
        if target is not None and tail and not isinstance(symbol, ast.ClassDef):
            target = _resolve(target) or target
        if target is not None:
            out.append(target)
    return out


@cache
def _is_backend(qualified: str) -> bool:
    if qualified == BASE:
        return True
    module, name = qualified.rsplit(".", 1)
    node = _symbols(module).get(name)
    if not isinstance(node, ast.ClassDef):
        return False
    return any(_is_backend(b) for b in _base_paths(module, node))


def _modules() -> list[str]:
    root = _vllm_dir()
    names = []
    for sub in ROOTS:
        for file in sorted((root / sub).rglob("*.py")):
            rel = file.relative_to(root.parent).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__init__":
                parts.pop()
            names.append(".".join(parts))
    return names


def _mentions_backend(module: str) -> bool:
    file = _module_file(module)
    return file is not None and "Backend" in file.read_text(encoding="utf-8")


def scan() -> dict[str, bool]:
    """Backend classes by path -> whether the class itself defines the method.

    Only modules whose text mentions ``Backend`` are parsed up front (a class cannot
    derive from ``AttentionBackend`` without its module naming a backend class);
    others are parsed when an import chain leads to them.
    """
    found: dict[str, bool] = {BASE: True}
    for module in filter(_mentions_backend, _modules()):
        for name, symbol in _symbols(module).items():
            if isinstance(symbol, ast.ClassDef) and _is_backend(f"{module}.{name}"):
                defines = any(
                    isinstance(n, ast.FunctionDef) and n.name == METHOD for n in symbol.body
                )
                found[f"{module}.{name}"] = defines
        for node in _tree(module).body:
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Call)
                and ast.unparse(node.value.func).endswith("create_composite_attention_backend")
            ):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        found[f"{module}.{target.id}"] = True
    return found


def _direct_definers() -> set[str]:
    """Top-level classes whose body has ``def get_supported_kernel_block_sizes``."""
    out = set()
    for module in _modules():
        file = _module_file(module)
        assert file is not None
        text = file.read_text(encoding="utf-8")
        if f"def {METHOD}" not in text:
            continue
        for node in ast.parse(text).body:
            if isinstance(node, ast.ClassDef) and any(
                isinstance(n, ast.FunctionDef) and n.name == METHOD for n in node.body
            ):
                out.add(f"{module}.{node.name}")
    return out


def _installed_version() -> str:
    import importlib.metadata

    return importlib.metadata.version("vllm").split("+")[0]


@pytest.fixture(scope="module")
def catalog_classes() -> set[str]:
    return set(load_catalog(_installed_version()).by_class)


@pytest.fixture(scope="module")
def found() -> dict[str, bool]:
    return scan()


def test_every_backend_class_is_in_the_catalog(
    catalog_classes: set[str], found: dict[str, bool]
) -> None:
    assert len(found) > 80
    missing = sorted(set(found) - catalog_classes)
    assert not missing, "backend classes missing from the catalog:\n  " + "\n  ".join(missing)


def test_catalog_has_no_class_vllm_lacks(catalog_classes: set[str], found: dict[str, bool]) -> None:
    stale = sorted(catalog_classes - set(found))
    assert not stale, "catalog classes vLLM does not define:\n  " + "\n  ".join(stale)


def test_every_class_defining_the_method_is_in_the_catalog(catalog_classes: set[str]) -> None:
    definers = _direct_definers()
    assert len(definers) > 40
    missing = sorted(definers - catalog_classes)
    assert not missing, "classes defining the method, missing:\n  " + "\n  ".join(missing)


def test_hand_written_entries_are_the_unimportable_ones() -> None:
    cat = load_catalog(_installed_version())
    import json

    from kvconfig.mirror import versions

    raw = json.loads(versions.catalog_file(_installed_version()).read_text(encoding="utf-8"))
    failed = set(raw["unimportable_modules"])
    for e in cat.entries:
        module = e.class_path.rsplit(".", 1)[0]
        assert (module in failed) == (not e.introspected), e.class_path
        if not e.introspected:
            assert e.note and e.source.startswith("vllm/"), e.class_path
