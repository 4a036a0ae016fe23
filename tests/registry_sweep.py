"""The registry-wide sweep: every text-generation architecture of the installed vLLM's
registry, planned offline and by vLLM's own start-up, on several platforms, backends and
block sizes.

Each architecture's ``config.json`` comes from its configuration class's defaults
(``tools.registry.configs``), or from a bundled real checkpoint config where
``examples/models`` has one (``REAL``). A case is one architecture on one platform with
one attention backend (or vLLM's choice) and one block size; ``run`` plans it both ways and
compares the plans (``kvconfig.engine.compare``: verdict, cause, groups).

An architecture vLLM's start-up cannot build from its config on the meta device (its
model code raises before any KV-cache decision: ``build_refusal``) is counted apart and
left out of the agreement; one kvconfig cannot derive offline (verdict ``unknown``,
KV401) is counted apart too, and makes the derived share; a case whose engine child could
not start at all is ``engine-failed`` (kvconfig's machinery, not vLLM's answer).

    python tests/registry_sweep.py --chunk 0/8 --json part0.json   # one chunk of eight
    python tests/registry_sweep.py --merge part*.json              # the figures

``tests/test_registry.py`` runs a subset in CI; the full sweep is the slow mode
(``KVCONFIG_SLOW=1``), its figures are in docs/engine.md.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "examples" / "models"

#: Architectures with a real checkpoint config in examples/models (provenance there).
REAL = {
    "DeepseekV3ForCausalLM": "deepseek-v3",
    "DeepseekV32ForCausalLM": "deepseek-v3.2-exp",
    "Gemma2ForCausalLM": "gemma-2-9b-it",
    "GptOssForCausalLM": "gpt-oss-120b",
    "JambaForCausalLM": "jamba-v0.1",
    "NemotronHForCausalLM": "nemotron-h-8b-base-8k",
    "Qwen3ForCausalLM": "qwen3-8b",
    "Qwen3NextForCausalLM": "qwen3-next-80b-a3b-instruct",
}

#: (platform, backend or None, block size or None): each architecture runs on each.
SETTINGS: tuple[tuple[str, str | None, int | None], ...] = (
    ("h100", None, 16),
    ("b200", None, None),
    ("h100", "FLASHINFER", 32),
    ("a100", "TRITON_ATTN", 64),
    ("l40s", "FLEX_ATTENTION", 96),
)


@dataclass(frozen=True)
class Case:
    arch: str
    platform: str
    backend: str | None
    block_size: int | None

    @property
    def id(self) -> str:
        return f"{self.arch}-{self.platform}-{self.backend or 'auto'}-{self.block_size or 'B'}"


def configs(folder: Path) -> dict[str, Path]:
    """One model folder per architecture (a real config where bundled)."""
    from tools.registry.configs import write_all

    write_all(folder)
    found = {p.name: p for p in folder.iterdir() if (p / "config.json").is_file()}
    for arch, name in REAL.items():
        if (MODELS / name / "config.json").is_file():
            found[arch] = MODELS / name
    return found


def cases(archs: Sequence[str]) -> list[Case]:
    return [Case(a, p, b, k) for a in sorted(archs) for p, b, k in SETTINGS]


def serve_config(case: Case, folder: Path, out: Path) -> Path:
    from kvconfig.derive.inputs import Model
    from kvconfig.derive.layers import model_context_length

    model = Model(str(folder), json.loads((folder / "config.json").read_text()))
    lines = [f"model: {folder.resolve()}"]
    lines.append(f"max-model-len: {min(4096, model_context_length(model) or 4096)}")
    if case.block_size is not None:
        lines.append(f"block-size: {case.block_size}")
    if case.backend is not None:
        lines.append(f"attention-backend: {case.backend}")
    path = out / f"{case.id}.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def offline_plan(path: Path, platform: str, model: Path | None = None) -> dict[str, Any] | str:
    """The offline plan of the serve config ``path`` (a ``model`` folder elsewhere, as in
    the sweep's temporary folders, is read only when allowed: ``--allow-path``)."""
    from kvconfig.cli import main

    out, err = io.StringIO(), io.StringIO()
    argv = ["plan", str(path), "--platform", platform, "--format", "json"]
    with contextlib.redirect_stderr(err):
        allow = ["--allow-path", str(model)] if model is not None else []
        code = main([*argv, *allow], stdout=out)
    if code not in (0, 1):
        return err.getvalue().strip()
    plan: dict[str, Any] = json.loads(out.getvalue())
    return plan


def build_refusal(plan: dict[str, Any] | str) -> bool:
    """vLLM's model code could not build the model from this config (on the meta device,
    before any KV-cache decision): a KV601 refusal raised in model or layer code outside
    attention, or a config vLLM cannot read."""
    if isinstance(plan, str):
        return True
    if not plan.get("engine", {}).get("refused"):
        return False
    for f in plan["findings"]:
        if f["code"] != "KV601":
            continue
        text = f["message"]
        if (
            "create_engine_config" in text
            or "vllm/model_executor/" in text
            or "vllm/models/" in text
        ):
            return "layers/attention" not in text
    return False


def first_error(plan: dict[str, Any]) -> str:
    """The first error finding's message (what vLLM's start-up raised)."""
    return next((f["message"] for f in plan["findings"] if f["severity"] == "error"), "")


@dataclass
class Result:
    case: Case
    offline: dict[str, Any] | str
    engine: dict[str, Any] | str
    differences: list[str]

    @property
    def outcome(self) -> str:
        if isinstance(self.engine, str) and self.engine.startswith(ENGINE_FAILED):
            return "engine-failed"
        if build_refusal(self.engine):
            return "vllm-cannot-build"
        if isinstance(self.offline, str):
            return "offline-input-error"
        if self.offline["verdict"] == "unknown":
            return "offline-unknown"
        return "agree" if not self.differences else "differ"


#: What an engine answer that is kvconfig's machinery failing (not vLLM's start-up) starts
#: with: such a case is counted apart (``engine-failed``), never as vLLM's refusal.
ENGINE_FAILED = "engine failed: "


def _engine_plans(
    targets: Sequence[Any], selected: Sequence[Case], jobs: int, timeout: float
) -> list[Any]:
    """vLLM's start-up of each target, one batch per setting (the cases that share an
    engine child). An engine child that cannot start (its import of vLLM outlived the
    start timeout on a loaded machine, or it was killed for memory before it answered:
    "vLLM's start-up could not begin: no output") raises for its whole batch; that batch
    is tried once more, then its cases are recorded as ``engine-failed`` so one child
    cannot stop the sweep."""
    from kvconfig import engine
    from kvconfig.errors import InputError

    batches: dict[tuple[str, str | None, int | None], list[int]] = {}
    for i, c in enumerate(selected):
        batches.setdefault((c.platform, c.backend, c.block_size), []).append(i)
    planned: list[Any] = [None] * len(targets)
    for indices in batches.values():
        answers: list[Any] | None = None
        failure = ENGINE_FAILED
        for _attempt in range(2):
            try:
                answers = engine.plans([targets[i] for i in indices], jobs=jobs, timeout=timeout)
                break
            except InputError as err:
                failure = f"{ENGINE_FAILED}{err}"
        for k, i in enumerate(indices):
            planned[i] = answers[k] if answers is not None else failure
    return planned


def run(
    selected: Sequence[Case], folders: dict[str, Path], jobs: int = 1, timeout: float = 900.0
) -> list[Result]:
    from kvconfig import engine
    from kvconfig.engine.compare import differences
    from kvconfig.load.platforms import parse_platform

    with tempfile.TemporaryDirectory() as tmp:
        paths = [serve_config(c, folders[c.arch], Path(tmp)) for c in selected]
        offline = [
            offline_plan(p, c.platform, folders[c.arch])
            for p, c in zip(paths, selected, strict=True)
        ]
        targets = [
            engine.serve_config_target(str(p), parse_platform(c.platform))
            for p, c in zip(paths, selected, strict=True)
        ]
        planned = _engine_plans(targets, selected, jobs, timeout)
    results = []
    for case, off, eng in zip(selected, offline, planned, strict=True):
        value: dict[str, Any] | str
        if isinstance(eng, str):
            value = eng
        else:
            value = str(eng) if isinstance(eng, Exception) else eng.to_json()
        diffs = differences(off, value) if isinstance(off, dict) and isinstance(value, dict) else []
        results.append(Result(case, off, value, diffs))
    return results


def summary(results: Sequence[Result]) -> dict[str, Any]:
    """Counts by outcome, agreement, the derived share, and every disagreement."""
    counts: dict[str, int] = {}
    for r in results:
        counts[r.outcome] = counts.get(r.outcome, 0) + 1
    compared = counts.get("agree", 0) + counts.get("differ", 0)
    # built: vLLM's start-up built the model in some case (it planned groups or started)
    built = {
        r.case.arch
        for r in results
        if isinstance(r.engine, dict) and (r.engine["groups"] or r.engine["verdict"] == "ok")
    }
    unknown = {r.case.arch for r in results if r.outcome == "offline-unknown"}
    return {
        "cases": len(results),
        "outcomes": counts,
        "agreement": round(counts.get("agree", 0) / compared, 4) if compared else None,
        "architectures_built": len(built),
        "architectures_derived": len(built - unknown),
        "derived_share": round(len(built - unknown) / len(built), 4) if built else None,
        "not_derived": sorted(unknown & built),
        "not_built": sorted({r.case.arch for r in results} - built),
        "differences": {r.case.id: r.differences for r in results if r.outcome == "differ"},
        "input_errors": {
            r.case.id: r.offline for r in results if r.outcome == "offline-input-error"
        },
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chunk", default="0/1", help="I/N: the I-th of N chunks")
    parser.add_argument("--only", default="", help="comma-separated architectures")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--json", help="write the results here")
    parser.add_argument(
        "--merge", nargs="*", help="sum chunk files instead of running (later files win)"
    )
    args = parser.parse_args(argv)
    if args.merge:
        parts = [json.loads(Path(p).read_text()) for p in args.merge]
        # a later file's result for the same case replaces an earlier one (a re-run)
        latest = {
            tuple(r["case"]): Result(Case(*r["case"]), r["offline"], r["engine"], r["differences"])
            for part in parts
            for r in part["results"]
        }
        results = list(latest.values())
        data = summary(results)
        data["seconds"] = round(sum(p["seconds"] for p in parts), 1)
        print(json.dumps(data, indent=1))
        return 0
    index, total = (int(x) for x in args.chunk.split("/"))
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        folders = configs(Path(tmp))
        archs = sorted(folders)
        if args.only:
            archs = [a for a in archs if a in set(args.only.split(","))]
        mine = archs[index::total]
        results = run(cases(mine), folders, jobs=args.jobs)
    data = summary(results)
    data["seconds"] = round(time.perf_counter() - start, 1)
    print(json.dumps(data, indent=1))
    if args.json:
        doc = {
            "seconds": data["seconds"],
            "results": [
                {
                    "case": [r.case.arch, r.case.platform, r.case.backend, r.case.block_size],
                    "offline": r.offline,
                    "engine": r.engine,
                    "differences": r.differences,
                }
                for r in results
            ],
        }
        Path(args.json).write_text(json.dumps(doc) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
