"""A seeded sweep of generated deployments, planned offline and by vLLM's own start-up.

Every case is a ``vllm serve --config`` file over one of the bundled model folders, on one
platform, with an explicit or default attention backend, block size, tensor parallelism,
KV-cache dtype, model runner and drafter. ``run`` plans each case both ways and compares
the plans group by group (``kvconfig.engine.compare``).

    python tests/engine_sweep.py --cases 300 --seed 33 --json sweep.json

``tests/test_engine_fidelity.py`` runs a prefix of the same sequence in CI; the full run is
the slow mode (``KVCONFIG_SLOW=1``), its figures are in docs/engine.md.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "examples" / "models"

DENSE = (None, "FLASH_ATTN", "FLASHINFER", "TRITON_ATTN", "FLEX_ATTENTION")
MLA = (None, "FLASHMLA", "TRITON_MLA", "FLASHINFER_MLA", "CUTLASS_MLA", "FLASH_ATTN_MLA")


@dataclass(frozen=True)
class Family:
    """A model folder and what may vary with it."""

    model: str
    heads: int
    """Query heads (tensor parallelism must divide them)."""
    backends: Sequence[str | None] = (None,)
    drafts: Sequence[str | None] = (None,)
    """``eagle3:FOLDER`` or ``mtp``."""
    kv_dtypes: Sequence[str] = ("auto", "fp8")


FAMILIES = (
    Family("qwen3-8b", 32, DENSE, (None, "eagle3:qwen3-8b-eagle3-angelslim")),
    Family("gemma-2-9b-it", 16, DENSE),
    Family("gemma-3-27b-it", 32, DENSE),
    Family(
        "gpt-oss-120b", 64, (None, "FLASH_ATTN", "TRITON_ATTN", "FLASHINFER"),
        (None, "eagle3:gpt-oss-120b-eagle3"),
    ),
    Family("deepseek-v3", 128, MLA, (None, "mtp")),
    Family("deepseek-v3.2-exp", 128, (None,), (None, "mtp")),
    Family("kimi-k2-instruct", 64, MLA, (None, "eagle3:kimi-k2-eagle3")),
    Family("minimax-m3-nvfp4", 64, (None,), (None, "eagle3:minimax-m3-eagle3-gqa"), ("auto",)),
    Family(
        "qwen3-next-80b-a3b-instruct", 16, (None, "FLASHINFER", "FLASH_ATTN", "TRITON_ATTN"),
        (None, "mtp"),
    ),
    Family("qwen3.5-9b", 16, (None, "FLASHINFER", "FLASH_ATTN"), (None, "mtp")),
    Family("nemotron-h-8b-base-8k", 32, (None, "FLASHINFER", "FLASH_ATTN")),
    Family("jamba-v0.1", 32, (None, "FLASHINFER", "FLASH_ATTN")),
)  # fmt: skip
PLATFORMS = ("a100", "l40s", "h100", "b200", "b300")
BLOCKS = (None, 16, 32, 64, 128, 256)
TPS = (1, 2, 4, 8)
DRAFT_BACKENDS = (None, "TRITON_ATTN", "FLASH_ATTN", "FLASHINFER")
RUNNERS = ("v2", "v2", "v1")
SEED = 33
"""The sweep's seed: the same seed gives the same cases."""

EXPLAINED: dict[str, str] = {}
"""Cases whose offline plan differs from vLLM's for a reason docs/engine.md explains."""

MAX_MODEL_LEN = 4096
"""Every case's context: long enough for every block size, short enough that the KV cache
of one request fits any device (the sweep is about block sizes, not memory)."""


@dataclass(frozen=True)
class Case:
    """One generated deployment on one platform."""

    index: int
    family: Family
    platform: str
    backend: str | None
    block_size: int | None
    tp: int
    kv_dtype: str
    runner: str
    draft: str | None
    draft_backend: str | None
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        parts = [
            f"{self.index:03d}",
            self.family.model,
            self.platform,
            self.backend or "auto",
            f"B{self.block_size or 'def'}",
            f"tp{self.tp}",
            self.kv_dtype,
            self.runner,
        ]
        if self.draft:
            parts.append(
                self.draft.split(":")[0] + (f"-{self.draft_backend}" if self.draft_backend else "")
            )
        return "_".join(parts)

    @property
    def env(self) -> dict[str, str]:
        return {"VLLM_USE_V2_MODEL_RUNNER": "0"} if self.runner == "v1" else {}


def cases(n: int, seed: int) -> list[Case]:
    """The first ``n`` cases of the sweep with ``seed`` (the same seed, the same cases)."""
    rng = random.Random(seed)
    out: list[Case] = []
    for index in range(n):
        fam = FAMILIES[index % len(FAMILIES)]
        tp = rng.choice([t for t in TPS if fam.heads % t == 0])
        draft = rng.choice(fam.drafts)
        draft_backend = rng.choice(DRAFT_BACKENDS) if draft and draft.startswith("eagle3") else None
        case = Case(
            index=index,
            family=fam,
            platform=rng.choice(PLATFORMS),
            backend=rng.choice(fam.backends),
            block_size=rng.choice(BLOCKS),
            tp=tp,
            kv_dtype=rng.choice(fam.kv_dtypes),
            runner=rng.choice(RUNNERS),
            draft=draft,
            draft_backend=draft_backend,
        )
        out.append(case)
    return out


def serve_config(case: Case) -> dict[str, Any]:
    """The ``vllm serve --config`` mapping of a case."""
    cfg: dict[str, Any] = {"model": str(MODELS / case.family.model), "max-model-len": MAX_MODEL_LEN}
    if case.tp > 1:
        cfg["tensor-parallel-size"] = case.tp
    if case.block_size is not None:
        cfg["block-size"] = case.block_size
    if case.backend is not None:
        cfg["attention-backend"] = case.backend
    if case.kv_dtype != "auto":
        cfg["kv-cache-dtype"] = case.kv_dtype
    if case.draft == "mtp":
        cfg["speculative-config"] = {"method": "mtp", "num_speculative_tokens": 1}
    elif case.draft:
        spec: dict[str, Any] = {
            "method": "eagle3",
            "model": str(MODELS / case.draft.split(":", 1)[1]),
            "num_speculative_tokens": 3,
        }
        if case.draft_backend:
            spec["attention_backend"] = case.draft_backend
        cfg["speculative-config"] = spec
    return cfg


def write(case: Case, folder: Path) -> Path:
    """The case's serve config as a YAML file in ``folder``."""
    import yaml

    path = folder / f"{case.id}.yaml"
    path.write_text(yaml.safe_dump(serve_config(case), sort_keys=False))
    return path


def offline_plan(path: Path, case: Case, version: str | None = None) -> dict[str, Any] | str:
    """kvconfig's offline plan JSON (for vLLM ``version``; default: the default release),
    or the one-line input error."""
    from kvconfig.cli import main

    args = ["plan", str(path), "--platform", case.platform, "--format", "json"]
    if version:
        args += ["--vllm-version", version]
    for k, v in case.env.items():
        args += ["--env", f"{k}={v}"]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(args, stdout=out)
    if code == 2:
        return err.getvalue().strip()
    plan: dict[str, Any] = json.loads(out.getvalue())
    return plan


@dataclass
class Result:
    """One case, both ways."""

    case: Case
    offline: dict[str, Any] | str
    engine: dict[str, Any] | str
    differences: list[str]

    @property
    def outcome(self) -> str:
        if isinstance(self.engine, str):
            return "engine-input-error"
        if isinstance(self.offline, str):
            return "offline-input-error"
        if self.offline["verdict"] == "unknown":
            return "offline-unknown"  # KV401: kvconfig does not derive the model
        return "agree" if not self.differences else "differ"


def run(
    selected: Sequence[Case],
    *,
    jobs: int = 1,
    version: str | None = None,
    python: str | None = None,
) -> list[Result]:
    """Plan every case offline (with ``version``'s rules) and through the start-up of the
    vLLM ``python`` has installed (default: this interpreter's), and compare."""
    from kvconfig import engine
    from kvconfig.engine.compare import differences
    from kvconfig.load.platforms import parse_platform

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        paths = [write(c, folder) for c in selected]
        offline = [offline_plan(p, c, version) for p, c in zip(paths, selected, strict=True)]
        targets = [
            engine.serve_config_target(str(p), parse_platform(c.platform), env=c.env)
            for p, c in zip(paths, selected, strict=True)
        ]
        planned = engine.plans(targets, jobs=jobs, python=python)
    results = []
    for case, off, eng in zip(selected, offline, planned, strict=True):
        eng_value: dict[str, Any] | str = str(eng) if isinstance(eng, Exception) else eng.to_json()
        diffs = (
            differences(off, eng_value)
            if isinstance(off, dict) and isinstance(eng_value, dict)
            else []
        )
        results.append(Result(case, off, eng_value, diffs))
    return results


def _errors(plan: dict[str, Any] | str) -> list[str]:
    if isinstance(plan, str):
        return [plan]
    return [
        f"vLLM: {f['code']} {f['message']}" for f in plan["findings"] if f["severity"] == "error"
    ]


def summary(results: Sequence[Result]) -> dict[str, Any]:
    """Counts by outcome, and every disagreement."""
    counts: dict[str, int] = {}
    for r in results:
        counts[r.outcome] = counts.get(r.outcome, 0) + 1
    compared = counts.get("agree", 0) + counts.get("differ", 0)
    return {
        "cases": len(results),
        "outcomes": counts,
        "agreement": counts.get("agree", 0) / compared if compared else None,
        "engine_versions": sorted(
            {r.engine["vllm_version"] for r in results if isinstance(r.engine, dict)}
        ),
        "differences": {
            r.case.id: [*r.differences, *_errors(r.engine)] for r in results if r.differences
        },
        "input_errors": {
            r.case.id: (r.engine if isinstance(r.engine, str) else r.offline)
            for r in results
            if r.outcome.endswith("input-error")
        },
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--json", help="write the summary here")
    parser.add_argument("--vllm-version", help="the release the offline side plans for")
    parser.add_argument("--vllm-python", help="the interpreter with that release installed")
    parser.add_argument("--skip", type=int, default=0, help="leave out the first N cases")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    chosen = cases(args.cases + args.skip, args.seed)[args.skip :]
    results = run(chosen, jobs=args.jobs, version=args.vllm_version, python=args.vllm_python)
    data = summary(results)
    data["seconds"] = round(time.perf_counter() - start, 1)
    data["seed"] = args.seed
    data["vllm_version"] = args.vllm_version
    text = json.dumps(data, indent=1)
    if args.json:
        Path(args.json).write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
