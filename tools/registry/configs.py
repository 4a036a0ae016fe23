"""The text-generation architectures of the installed vLLM's registry, and a
``config.json`` for each built from its configuration class's defaults.

vLLM's registry (``vllm/model_executor/models/registry.py``) names each architecture's
module; the configuration class is the one that module imports from transformers or
from vLLM's own ``vllm.transformers_utils.configs``. Its defaults are the layout the
model's authors chose; ``SHRINK`` keys are lowered where that keeps the layout (fewer
layers keep every per-layer pattern only when the pattern's period divides the count,
so layer counts are left alone).
"""

from __future__ import annotations

import ast
import importlib
import json
from pathlib import Path
from typing import Any

#: Configuration classes that are not a model's (the modules import them too).
NOT_MODEL = {
    "VllmConfig",
    "CacheConfig",
    "ModelConfig",
    "QuantizationConfig",
    "PretrainedConfig",
    "LoRAConfig",
    "ParallelConfig",
    "SpeculativeConfig",
    "CompilationConfig",
    "SchedulerConfig",
    "MultiModalConfig",
    "PoolerConfig",
    "FusedMoEConfig",
    "AttentionConfig",
    "KVTransferConfig",
    "DeviceConfig",
    "LoadConfig",
}


def text_generation() -> dict[str, tuple[str, str]]:
    """``{architecture: (module, class)}`` of ``_TEXT_GENERATION_MODELS``."""
    from vllm.model_executor.models import registry

    return dict(registry._TEXT_GENERATION_MODELS)


def module_path(module: str) -> str:
    return module if module.startswith("vllm.") else f"vllm.model_executor.models.{module}"


def config_classes(module: str) -> list[type]:
    """The model configuration classes a model module imports, most specific first."""
    spec = importlib.util.find_spec(module_path(module))
    if spec is None or spec.origin is None:
        return []
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    names: list[tuple[str, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                if alias.name.endswith("Config") and alias.name not in NOT_MODEL:
                    names.append((node.module, alias.name))
    found: list[type] = []
    for mod, name in names:
        if not (mod.startswith("transformers") or mod.startswith("vllm.transformers_utils")):
            continue
        try:
            cls = getattr(importlib.import_module(mod), name)
        except Exception:
            continue
        if (
            isinstance(cls, type)
            and str(getattr(cls, "model_type", None) or "")
            and cls not in found
        ):
            found.append(cls)
    return found


def _by_model_type(arch: str, module: str) -> list[type]:
    """Configuration classes whose ``model_type`` the module's or architecture's name
    spells (transformers' ``CONFIG_MAPPING``, then vLLM's ``_CONFIG_REGISTRY``)."""
    import re

    from transformers import CONFIG_MAPPING
    from vllm.transformers_utils.config import _CONFIG_REGISTRY

    short = module.rsplit(".", 1)[-1]
    stem = re.sub(r"(ForCausalLM|ForConditionalGeneration|Model)$", "", arch)
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", stem).lower()
    found: list[type] = []
    for name in dict.fromkeys([short, stem.lower(), snake, snake.replace("_", "")]):
        for table in (CONFIG_MAPPING, _CONFIG_REGISTRY):
            try:
                cls = table[name]
            except Exception:
                continue
            if isinstance(cls, type) and cls not in found:
                found.append(cls)
    return found


def default_config(arch: str, module: str) -> dict[str, Any] | str:
    """The ``config.json`` of ``arch`` from its configuration class's defaults, or why not."""
    classes = config_classes(module) or _by_model_type(arch, module)
    if not classes:
        return "no configuration class imported by the model module"
    errors = []
    for cls in classes:
        try:
            cfg = cls()
        except Exception as err:
            errors.append(f"{cls.__name__}(): {type(err).__name__}: {err}")
            continue
        doc = cfg.to_dict()
        doc["architectures"] = [arch]
        doc.setdefault("model_type", getattr(cls, "model_type", ""))
        doc.pop("transformers_version", None)
        doc["torch_dtype"] = "bfloat16"
        out: dict[str, Any] = doc
        return out
    return "; ".join(errors)


def write_all(folder: Path) -> dict[str, str]:
    """One ``ARCH/config.json`` per architecture under ``folder``; what could not be made."""
    failed: dict[str, str] = {}
    for arch, (module, _cls) in sorted(text_generation().items()):
        doc = default_config(arch, module)
        if isinstance(doc, str):
            failed[arch] = doc
            continue
        (folder / arch).mkdir(parents=True, exist_ok=True)
        (folder / arch / "config.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")
    return failed
