"""Held-out deployments: architectures the offline path derives that no test or example
names, each in one deployment drawn at random (platform,
tensor parallelism, KV-cache dtype, block size, backend, context length), planned
offline and by vLLM's own start-up.

The registry sweep (``registry_sweep.py``) runs every architecture on five fixed
settings; this draws settings it never uses, on families chosen without looking at how
they plan. A disagreement where one side starts and the other refuses is a silent wrong
verdict; ``vllm-raises`` rows (vLLM raised before planning, kvconfig planned) are read
one by one: the model code cannot build the default config, or kvconfig misses a
refusal.

    python tests/heldout_sweep.py --seed 20 --count 20 --json heldout.json
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

PLATFORMS = ("h100", "b200", "a100")
BACKENDS = (None, None, None, "FLASHINFER", "TRITON_ATTN", "FLEX_ATTENTION")
BLOCKS = (None, None, 16, 32, 64, 128)


def seen() -> set[str]:
    """Architecture names any test, example or golden file mentions."""
    names: set[str] = set()
    pattern = re.compile(
        r"\b[A-Z][A-Za-z0-9_]*(?:ForCausalLM|LMHeadModel|ForConditionalGeneration)\b"
    )
    for folder in ("tests", "examples"):
        for path in (ROOT / folder).rglob("*"):
            if path.is_file() and path.suffix in (".py", ".json", ".yaml", ".yml", ".sh", ".md"):
                names.update(pattern.findall(path.read_text(errors="replace")))
    return names


def derived() -> set[str]:
    """Architectures the offline path derives (family modules and the generic rule)."""
    from kvconfig.derive.layers import DERIVERS
    from kvconfig.mirror.architectures import decoder_rules

    return set(decoder_rules()) | set(DERIVERS)


def deployment(rng: random.Random, arch: str, folder: Path, out: Path) -> tuple[Path, str]:
    platform = rng.choice(PLATFORMS)
    lines = [f"model: {folder.resolve()}"]
    # above some models' own length too: vLLM refuses those (VLLM_ALLOW_LONG_MAX_MODEL_LEN)
    lines.append(f"max-model-len: {rng.choice((1024, 2048, 4096, 8192, 32768))}")
    tp = rng.choice((1, 1, 2, 4))
    if tp > 1:
        lines.append(f"tensor-parallel-size: {tp}")
    if rng.random() < 0.3:
        lines.append("kv-cache-dtype: fp8")
    block = rng.choice(BLOCKS)
    if block is not None:
        lines.append(f"block-size: {block}")
    backend = rng.choice(BACKENDS)
    if backend is not None:
        lines.append(f"attention-backend: {backend}")
    path = out / f"{arch}.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, platform


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seed", type=int, default=20)
    parser.add_argument("--count", type=int, default=20)
    parser.add_argument("--json")
    args = parser.parse_args(argv)

    import registry_sweep as S

    from kvconfig import engine
    from kvconfig.engine.compare import differences
    from kvconfig.load.platforms import parse_platform

    start = time.perf_counter()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        folders = S.configs(Path(tmp) / "models")
        pool = sorted((derived() - seen()) & set(folders))
        chosen = rng.sample(pool, min(args.count, len(pool)))
        out = Path(tmp) / "serve"
        out.mkdir()
        made = [(a, *deployment(rng, a, folders[a], out)) for a in chosen]
        offline = [S.offline_plan(p, plat, folders[a]) for a, p, plat in made]
        targets = [engine.serve_config_target(str(p), parse_platform(plat)) for _, p, plat in made]
        planned = engine.plans(targets, timeout=900)
        texts = {a: p.read_text() for a, p, _ in made}
    rows = []
    for (arch, _, plat), off, eng in zip(made, offline, planned, strict=True):
        value: Any = str(eng) if isinstance(eng, Exception) else eng.to_json()
        both = isinstance(off, dict) and isinstance(value, dict)
        diffs = differences(off, value) if both else []
        vllm_refused = isinstance(value, str) or value["verdict"] == "reject"
        if isinstance(off, str):  # an input error offline: vLLM must refuse the same file
            outcome = "agree" if vllm_refused else "differ"
            diffs = [] if vllm_refused else [f"offline refuses ({off}), vLLM starts"]
        elif isinstance(value, str) or S.build_refusal(value):
            # vLLM raised before planning while kvconfig planned: its model code cannot
            # build the config, or a refusal kvconfig misses; the row says which
            outcome = "vllm-raises"
            diffs = [value if isinstance(value, str) else S.first_error(value)]
        else:
            outcome = "agree" if not diffs else "differ"
        rows.append(
            {
                "arch": arch,
                "platform": plat,
                "deployment": texts[arch].splitlines()[1:],
                "outcome": outcome,
                "offline": off if isinstance(off, str) else off["verdict"],
                "vllm": value if isinstance(value, str) else value["verdict"],
                "vllm_refusal": "" if isinstance(value, str) else S.first_error(value)[:300],
                "differences": diffs,
            }
        )
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
    compared = counts.get("agree", 0) + counts.get("differ", 0)
    summary = {
        "pool": len(pool),
        "chosen": chosen,
        "outcomes": counts,
        "agreement": round(counts.get("agree", 0) / compared, 4) if compared else None,
        "seconds": round(time.perf_counter() - start, 1),
        "rows": rows,
    }
    text = json.dumps(summary, indent=1)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "tests"))
    raise SystemExit(main())
