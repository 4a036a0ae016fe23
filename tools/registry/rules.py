"""Which derivation rule each text-generation architecture of the installed vLLM uses,
as ``kvconfig/mirror/data/vllm-<version>/architectures.json``.

``python -m tools.registry.rules LAYOUTS.json [-o FILE]`` reads what vLLM's own start-up
built for each architecture's default ``config.json`` (``tools.registry.layouts``) and
the installed release's sources, and writes one entry per architecture kvconfig derives
with the generic decoder rule (``kvconfig.derive.generic``):

* ``layers``: the attention layers' name template (``{i}`` the layer index), read off
  the layer names vLLM registered; only architectures whose every layer is one
  attention layer of one template, of kinds full, sliding-window or chunked-local;
* ``attribute_map`` and ``defaults``: the configuration class's key aliases and its
  defaults for the keys the rule reads (what vLLM sees when ``config.json`` leaves a key
  out);
* ``layer_types``: the model module reads ``config.layer_types`` (each layer's window
  comes from it; otherwise vLLM's cache-wide window applies to every layer);
* ``chunked``: the module builds chunked-local attention from ``attention_chunk_size``
  on the layers ``no_rope_layers`` marks with rope (Llama 4).
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
from pathlib import Path
from typing import Any

#: Keys of the configuration class the generic rule reads, with their defaults recorded.
GEOMETRY_KEYS = (
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "num_kv_heads",
    "n_head_kv",
    "multi_query_group_num",
    "num_attention_groups",
    "multi_query",
    "new_decoder_architecture",
    "head_dim",
    "hidden_size_per_head",
    "hidden_size",
    "sliding_window",
    "use_sliding_window",
    "layer_types",
    "attention_chunk_size",
    "no_rope_layers",
)

KINDS = {"full_attention", "sliding_window", "chunked_local"}


def template(names: list[str]) -> str | None:
    """``a.{i}.b`` when the names are exactly ``a.0.b`` .. ``a.N-1.b``, else None."""
    found = set()
    indices = []
    for name in names:
        m = re.fullmatch(r"(.*?\.)(\d+)(\..*)", name)
        if m is None:
            return None
        found.add((m.group(1), m.group(3)))
        indices.append(int(m.group(2)))
    if len(found) != 1 or sorted(indices) != list(range(len(indices))):
        return None
    head, tail = found.pop()
    return f"{head}{{i}}{tail}"


def _source(module: str) -> str:
    spec = importlib.util.find_spec(
        module if module.startswith("vllm.") else f"vllm.model_executor.models.{module}"
    )
    assert spec is not None and spec.origin is not None
    return Path(spec.origin).read_text(encoding="utf-8")


def _class_facts(arch: str, module: str) -> dict[str, Any]:
    from tools.registry.configs import _by_model_type, config_classes

    classes = config_classes(module) or _by_model_type(arch, module)
    for cls in classes:
        try:
            cfg = cls()
        except Exception:
            continue
        defaults = {}
        raw = cfg.to_dict()
        for key in GEOMETRY_KEYS:
            if key in raw and raw[key] is not None:
                defaults[key] = raw[key]
        amap = dict(getattr(cls, "attribute_map", {}) or {})
        return {
            "model_type": getattr(cls, "model_type", ""),
            "attribute_map": {k: v for k, v in amap.items() if k in GEOMETRY_KEYS},
            "defaults": {k: v for k, v in defaults.items() if k != "layer_types"},
        }
    return {"model_type": "", "attribute_map": {}, "defaults": {}}


def rule(arch: str, module: str, plan: dict[str, Any] | str) -> dict[str, Any] | str:
    """The generic rule's entry for ``arch``, or why it does not apply."""
    if isinstance(plan, str):
        return f"vLLM's start-up did not plan it: {plan.splitlines()[0][:160]}"
    if plan["verdict"] != "ok" or not plan["groups"]:
        codes = [f["message"][:160] for f in plan["findings"] if f["severity"] == "error"]
        return f"vLLM refused it: {'; '.join(codes)}"
    kinds = {g["kind"] for g in plan["groups"]}
    if not kinds <= KINDS:
        return f"layer kinds {', '.join(sorted(kinds - KINDS))}"
    names = [n for g in plan["groups"] for n in g["layers"]["target"]]
    pattern = template(names)
    if pattern is None:
        return "layer names follow no single template"
    source = _source(module)
    return {
        "module": module,
        "layers": pattern,
        "layer_types": "layer_types" in source,
        "chunked": "attention_chunk_size" in source and "no_rope_layers" in source,
        **_class_facts(arch, module),
    }


def serve_file(folder: Path, out: Path, block_size: int = 16) -> Path:
    """The serve config ``tools.registry.layouts`` starts for a model folder."""
    from kvconfig.derive.inputs import Model
    from kvconfig.derive.layers import model_context_length

    model = Model(str(folder), json.loads((folder / "config.json").read_text()))
    length = min(4096, model_context_length(model) or 4096)
    out.write_text(
        f"model: {folder.resolve()}\nblock-size: {block_size}\nmax-model-len: {length}\n",
        encoding="utf-8",
    )
    return out


def disagreements(
    configs: Path, layouts: dict[str, Any], archs: list[str], platform: str = "h100"
) -> dict[str, str]:
    """The architectures whose offline plan (with the rules just written) differs from
    vLLM's, and how."""
    import tempfile

    from kvconfig.api import load_deployment, resolve
    from kvconfig.engine.compare import differences
    from kvconfig.mirror.architectures import decoder_rules

    decoder_rules.cache_clear()
    found: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for arch in archs:
            path = serve_file(configs / arch, Path(tmp) / f"{arch}.yaml")
            try:
                plan = resolve(load_deployment(str(path), platform=platform))
            except Exception as err:
                found[arch] = f"offline: {err}"
                continue
            diff = differences(plan.model_dump(mode="json", by_alias=True), layouts[arch])
            if diff:
                found[arch] = "offline plan differs from vLLM's: " + "; ".join(diff)
    decoder_rules.cache_clear()
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("layouts", type=Path, help="tools.registry.layouts' output")
    parser.add_argument("--configs", type=Path, required=True, help="its CONFIGS folder")
    parser.add_argument("-o", "--output", type=Path)
    parser.add_argument("--why", type=Path, help="also write why each other one is not")
    args = parser.parse_args(argv)

    import vllm

    from kvconfig.mirror import versions
    from tools.registry.configs import text_generation

    layouts = json.loads(args.layouts.read_text(encoding="utf-8"))
    rules: dict[str, Any] = {}
    why: dict[str, str] = {}
    for arch, (module, _cls) in sorted(text_generation().items()):
        if arch not in layouts:
            why[arch] = "no config.json from its configuration class"
            continue
        found = rule(arch, module, layouts[arch])
        if isinstance(found, str):
            why[arch] = found
        else:
            rules[arch] = found
    out = args.output or versions.folder(vllm.__version__) / "architectures.json"
    doc = {"vllm_version": vllm.__version__, "decoder": rules}
    out.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    # keep only what the rule plans as vLLM's start-up did on the same config.json
    for arch, why_not in disagreements(args.configs, layouts, list(rules)).items():
        why[arch] = why_not
        del rules[arch]
    out.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    if args.why:
        args.why.write_text(json.dumps(why, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{len(rules)} architectures on the generic decoder rule, {len(why)} not")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
