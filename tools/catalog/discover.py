"""Steps 1 and 2 of the catalog generator: walk vLLM's modules under the emulator and
collect every backend class, with its vLLM name, source line and the layers it serves;
the classes of modules that cannot be imported here are found in their source.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tools.catalog import emulate

ROOTS = ("vllm.v1.attention.backends", "vllm.models", "vllm.model_executor")
"""The packages whose modules are walked."""

EXTRA_MODULES = ("vllm.v1.attention.backend",)
"""Walked too: the module of ``AttentionBackend`` itself, which declares the default."""

_METHOD = "get_supported_kernel_block_sizes"


@dataclass
class Discovery:
    """What the walk found: backend classes by path, and the modules that failed."""

    classes: dict[str, Any] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    modules: int = 0


def vllm_root() -> Path:
    """The installed ``vllm`` package folder."""
    import vllm

    return Path(vllm.__file__).parent


def module_names(roots: Iterable[str] = ROOTS) -> list[str]:
    """Every module under ``roots``, sorted, packages before their contents."""
    base = vllm_root()
    names: list[str] = []
    for root in roots:
        folder = base.joinpath(*root.split(".")[1:])
        for path in sorted(folder.rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            rel = path.relative_to(base).with_suffix("")
            parts = ["vllm", *rel.parts]
            if parts[-1] == "__init__":
                parts.pop()
            names.append(".".join(parts))
    names.extend(EXTRA_MODULES)
    return sorted(set(names), key=lambda n: n.split("."))


def _error_text(err: BaseException) -> str:
    text = str(err).splitlines()[0] if str(err) else ""
    text = text.replace(str(vllm_root().parent) + os.sep, "")
    return f"{type(err).__name__}: {text}"[:200]


def discover(roots: Iterable[str] = ROOTS) -> Discovery:
    """Import every module under ``roots`` and collect the backend classes."""
    found = Discovery()
    names = module_names(roots)
    found.modules = len(names)
    for name in names:
        try:
            module = emulate.import_module(name)
        except BaseException as err:  # a module may fail in any way on a CPU host
            if isinstance(err, KeyboardInterrupt):
                raise
            found.failed[name] = _error_text(err)
            continue
        for attr, obj in sorted(vars(module).items()):
            if not isinstance(obj, type) or obj.__module__ != name:
                continue
            if obj.__qualname__ != attr or not callable(getattr(obj, _METHOD, None)):
                continue
            found.classes[f"{name}.{attr}"] = obj
    return found


def load_class(path: str) -> Any:
    """A backend class by path, under the neutral platform.

    Some modules import only after a sibling (``vllm/models/qwen4_exp/*/qsa.py`` and
    its ``model.py`` import each other); when the direct import fails, the modules of
    the class's package are imported in the walk's order first, as the generator did.
    """
    try:
        return emulate.load(path)
    except ImportError:
        package = ".".join(path.split(".")[:3])
        for name in module_names((package,)):
            try:
                emulate.import_module(name)
            except Exception:
                continue
        return emulate.load(path)


def source_of(cls: Any) -> str:
    """``vllm/<file>:<line>`` of the ``def`` that ``cls`` inherits its sizes from."""
    for klass in cls.__mro__:
        if _METHOD in vars(klass):
            raw = vars(klass)[_METHOD]
            func = getattr(raw, "__func__", raw)
            code = func.__code__
            path = Path(code.co_filename)
            lines = path.read_text(encoding="utf-8").splitlines()
            line = code.co_firstlineno
            while line <= len(lines) and f"def {_METHOD}" not in lines[line - 1]:
                line += 1
            rel = path.relative_to(vllm_root().parent).as_posix()
            return f"{rel}:{line}"
    raise ValueError(f"{cls} has no {_METHOD}")


def vllm_name(cls: Any) -> str:
    """``get_name()``, or ``""`` for an abstract class whose ``get_name`` raises."""
    try:
        return str(cls.get_name())
    except NotImplementedError:
        return ""


def _keeps_default(cls: Any) -> bool:
    """Whether the class inherits ``AttentionBackend``'s ``[MultipleOf(1)]`` unchanged."""
    owner = next(k for k in cls.__mro__ if _METHOD in vars(k))
    return bool(owner.__name__ == "AttentionBackend")


def classify(path: str, cls: Any) -> str:
    """The layers a backend serves (``schemas.catalog.LayerFamily``).

    From vLLM's own class methods (``is_ssm``, ``is_mla``, ``is_sparse``) and names:
    indexers say so in their name, DeepSeek's sliding-window MLA backend is
    ``DEEPSEEK_SPARSE_SWA``; storage-only backends that keep the default sizes and
    serve no attention or state layer are ``other``.
    """
    name = vllm_name(cls)
    if cls.is_ssm():
        return "state"
    if "INDEXER" in name or "Indexer" in path.rsplit(".", 1)[-1]:
        return "indexer"
    if "SWA" in name and (cls.is_mla() or "SPARSE" in name):
        return "sliding_window_mla"
    if cls.is_mla() and cls.is_sparse():
        return "sparse_mla"
    if cls.is_mla():
        return "mla"
    if not name or _keeps_default(cls) or name in ("KPOOL_TAIL", "CompressorBackend"):
        return "other"
    return "attention"


def registry() -> tuple[dict[str, str], dict[str, str]]:
    """vLLM's ``AttentionBackendEnum`` and ``MambaAttentionBackendEnum``: name -> class path."""
    from vllm.v1.attention.backends.registry import (
        AttentionBackendEnum,
        MambaAttentionBackendEnum,
    )

    def table(enum: Any) -> dict[str, str]:
        return {m.name: m.value for m in enum if isinstance(m.value, str) and m.value}

    return table(AttentionBackendEnum), table(MambaAttentionBackendEnum)


# -- classes of modules that cannot be imported here ---------------------------------


def scan_failed(
    failed: Iterable[str], known: Mapping[str, Any]
) -> dict[str, tuple[str, bool, int]]:
    """Backend classes in modules that failed to import: path -> (base, defines, line).

    A top-level class counts when it defines ``get_supported_kernel_block_sizes`` or
    one of its bases is (by name) a known backend class; the search repeats until no
    new class is found, so a subclass of a subclass is found too.
    """
    base = vllm_root().parent
    trees: dict[str, ast.Module] = {}
    for name in sorted(failed):
        path = base.joinpath(*name.split("."))
        file = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        trees[name] = ast.parse(file.read_text(encoding="utf-8"))
    names = {p.rsplit(".", 1)[1] for p in known}
    out: dict[str, tuple[str, bool, int]] = {}
    grew = True
    while grew:
        grew = False
        for module, tree in trees.items():
            for node in tree.body:
                if not isinstance(node, ast.ClassDef) or f"{module}.{node.name}" in out:
                    continue
                bases = [ast.unparse(b).rsplit(".", 1)[-1] for b in node.bases]
                defines = any(
                    isinstance(n, ast.FunctionDef) and n.name == _METHOD for n in node.body
                )
                hit = next((b for b in bases if b in names), None)
                if defines or hit:
                    out[f"{module}.{node.name}"] = (hit or "", defines, node.lineno)
                    names.add(node.name)
                    grew = True
    return out
