"""Every reader and command keeps the exit-code contract, whatever the input.

Inputs are the shipped files of each format, mutated (bytes flipped, inserted, deleted,
lines dropped, repeated or swapped, tokens that stress YAML, JSON and shell inserted,
pieces spliced from other files), and run in-process through ``kvconfig.cli.main`` (and
the Python API for deployment files). Each run must:

* exit 0, 1 or 2 (never 3, never an exception out of ``main``);
* print no traceback;
* with exit 2, write one line per problem on stderr, each ``kvconfig: ...`` (exactly one
  for a single input);
* finish within ``TIME_BOUND`` seconds (a hang is a failure, not a stall);
* through the API, raise nothing but kvconfig's own errors.

A file is written into a scratch copy of ``examples/`` (its ``models`` folder linked), so
relative model paths still resolve and the mutations reach past the first reader.
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import re
import shlex
import signal
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kvconfig.cli import main
from kvconfig.cli.commands import INTERNAL_ERROR

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
REALWORLD = ROOT / "tests" / "realworld" / "files"

TIME_BOUND = 10.0
"""Seconds one input may take (the slowest real inputs take well under one)."""


class Hang(BaseException):
    """An input ran past ``TIME_BOUND`` (a BaseException: ``main`` must not catch it)."""


@dataclass(frozen=True)
class Format:
    """One input format: its seed files and how the command line takes a file of it."""

    name: str
    seeds: tuple[Path, ...]
    argv: Callable[[Path, Path], list[str]]
    """(file, work folder) -> ``kvconfig`` arguments."""
    api: bool = False
    """Also load the file through the Python API."""


def _ops(*names: str) -> tuple[Path, ...]:
    return tuple(EXAMPLES / "operators" / n for n in names)


def _realworld(fmt: str) -> tuple[Path, ...]:
    """The real-file corpus's files of operator format ``fmt`` (tests/realworld), by the
    project each comes from: chart values are ``helm``, the other Kubernetes files
    (rendered charts, Deployments, LeaderWorkerSets, aibrix and GKE samples) ``kubernetes``."""
    by_owner = {"kserve": "kserve", "ai-dynamo": "dynamo", "skypilot-org": "skypilot",
                "ray-project": "rayserve"}  # fmt: skip
    found = []
    for path in sorted(REALWORLD.rglob("*.y*ml")):
        owner = path.relative_to(REALWORLD).parts[0]
        values = "values" in path.name or path.name == "production_stack_specification.yaml"
        kind = by_owner.get(owner) or ("helm" if values else "kubernetes")
        if kind == fmt:
            found.append(path)
    return tuple(found)


def _scripts() -> tuple[Path, ...]:
    """The real-file corpus's shell launch scripts (tests/realworld)."""
    return tuple(sorted(REALWORLD.rglob("*.sh")))


def _lint(path: Path, work: Path) -> list[str]:
    return ["lint", "--platform", "h200", str(path)]


COMMANDS = (
    "vllm serve ./models/qwen3-8b --block-size 16",
    "VLLM_USE_V2_MODEL_RUNNER=0 vllm serve ./models/qwen3-8b --block-size 128 "
    "--attention-backend FLASHINFER --speculative-config "
    '\'{"model": "./models/qwen3-8b-eagle3-angelslim", "method": "eagle3", '
    '"num_speculative_tokens": 3, "attention_backend": "TRITON_ATTN"}\'',
    "env HF_TOKEN=x vllm serve ./models/gemma-3-27b-it --kv-cache-dtype fp8 "
    "--speculative-config.method ngram --speculative-config.num_speculative_tokens=4",
    "python -m vllm.entrypoints.openai.api_server --model ./models/deepseek-v3 "
    "--tensor-parallel-size 8 --block-size 64 --hf-overrides '{\"num_hidden_layers\": 2}'",
    "python -m dynamo.vllm --model ./models/qwen3-8b --block-size 32 --connector nixl",
)

FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        Format("serve", tuple(sorted(EXAMPLES.glob("*.yaml"))), _lint, api=True),
        Format("native", tuple(sorted((EXAMPLES / "native").glob("*.yaml"))), _lint, api=True),
        Format(
            "fleet",
            tuple(sorted((EXAMPLES / "fleets").glob("*.yaml"))),
            lambda p, w: ["lint", "--fleet", str(p)],
        ),
        Format(
            "kubernetes",
            _ops(
                "qwen3-8b-eagle3-gh200-deployment.yaml",
                "job-api-server.yaml",
                "leaderworkerset.yaml",
                "pd-decode-prefill-manifest.yaml",
            )
            + _realworld("kubernetes"),
            _lint,
        ),
        Format("compose", _ops("qwen3-8b-eagle3-gh200-compose.yaml"), _lint),
        Format("script", _scripts(), _lint),
        Format(
            "helm",
            _ops("qwen3-8b-eagle3-gh200-production-stack.yaml", "llm-d-modelservice-values.yaml")
            + _realworld("helm"),
            _lint,
        ),
        Format(
            "kserve",
            _ops("inferenceservice-custom-resource.yaml", "kserve-llminferenceservice.yaml")
            + _realworld("kserve"),
            _lint,
        ),
        Format("dynamo", _ops("dynamo-graph-deployment.yaml") + _realworld("dynamo"), _lint),
        Format("skypilot", _ops("skypilot-task.yaml") + _realworld("skypilot"), _lint),
        Format("rayserve", _ops("rayserve-llm-config.yaml") + _realworld("rayserve"), _lint),
        Format(
            "explain",
            tuple(sorted(EXAMPLES.glob("qwen3-8b-*.yaml"))),
            lambda p, w: ["explain", "--platform", "gh200", str(p)],
        ),
        Format(
            "export",
            tuple(sorted(EXAMPLES.glob("*.yaml")))[:4],
            lambda p, w: ["export", "--platform", "h200", str(p), "-o", str(w / "out.json")],
        ),
    )
}
"""Every file format the command line reads (``command``, ``diff``, ``stdin`` and
``repo`` are built by ``Workspace``)."""

ALL = (*FORMATS, "command", "diff", "stdin", "repo")

#: Repository configurations (docs/inputs.md), seeds of ``repo``: ``.kvconfig.toml`` and
#: ``pyproject.toml``'s ``[tool.kvconfig]``; ``repo`` runs ``kvconfig lint`` on a serve
#: config in a folder holding the mutated one.
REPO_CONFIGS = (
    b'platforms = ["H100", "H200"]\nmodel-paths = ["/mnt/models=./models"]\n'
    b'vllm-version = "0.33.0"\n[env]\nVLLM_USE_V2_MODEL_RUNNER = "0"\n',
    b'[project]\nname = "x"\n\n[tool.kvconfig]\nplatforms = ["GH200"]\n'
    b'model-paths = ["Qwen/Qwen3-8B=./models/qwen3-8b"]\nvllm-version = "0.32.0"\n'
    b'[tool.kvconfig.env]\nVLLM_ATTENTION_BACKEND = "FLASHINFER"\n',
)
REPO_SERVE = EXAMPLES / "qwen3-8b-eagle3-gh200-triton-128.yaml"

#: Where the files' model paths and Hub ids are found here (``--model-path``).
MODEL_PATHS = (
    f"/mnt/models={EXAMPLES / 'models'}",
    f"Qwen/Qwen3-8B={EXAMPLES / 'models' / 'qwen3-8b'}",
    f"google/gemma-3-27b-it={EXAMPLES / 'models' / 'gemma-3-27b-it'}",
    f"deepseek-ai/DeepSeek-V3={EXAMPLES / 'models' / 'deepseek-v3'}",
)

KSERVE_MODELS = f"/mnt/models={EXAMPLES / 'models' / 'qwen3-8b'}"


def _with_models(argv: list[str], fmt: str = "") -> list[str]:
    """``argv`` with the ``--model-path`` rules after its command's name (for KServe,
    ``/mnt/models``, where its storage initializer puts the one model, is Qwen3-8B's
    folder, as the examples' ``storageUri`` says)."""
    if argv[0] not in ("lint", "plan", "explain", "export") or "--fleet" in argv:
        return argv
    rules = (KSERVE_MODELS, *MODEL_PATHS[1:]) if fmt == "kserve" else MODEL_PATHS
    flags = [w for rule in rules for w in ("--model-path", rule)]
    return [argv[0], *flags, *argv[1:]]


#: Tokens that stress YAML, JSON, shell words and kvconfig's own fields.
TOKENS = (
    ":", "- ", "[", "]", "{", "}", ",", "#", "&a ", "*a", "!!python/object:os.system ",
    "!!binary ", "|", ">", "'", '"', "\\", "\t", "\n", "\n  ", "---\n", "...\n", "<<: ",
    "~", "null", "true", "no", "1e309", "-1", "0", "0x10", "9" * 400, ".nan", ".inf",
    "\x00", "\ufeff", "\udcff", "é", "${X}", "${X:-16}", "$(id)", "`id`", "$$", "%",
    "[" * 300, "{\"a\":" * 300, "- " * 200, "&a [*a, *a, *a, *a]", "model: ",
    "block-size: ", "--block-size", "--config", "--speculative-config.model ", "=",
    "KV101", "KV999", "\"kvconfig_fleet\": 1", "\"groups\": [", "env_file: /etc/passwd",
    "../../../../etc/passwd", "/dev/zero", "hf_" + "x" * 30,
)  # fmt: skip


_DIGIT = re.compile(rb"[0-9]")


def mutate(data: bytes, rng: random.Random, others: Sequence[bytes]) -> bytes:
    """1 to 4 random mutations of ``data``."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(9)
        n = len(out)
        at = rng.randint(0, n)
        if kind == 0 and n:
            out[rng.randrange(n)] = rng.randrange(256)
        elif kind == 1:
            out[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif kind == 2 and n:
            end = min(n, at + rng.randint(1, 64))
            del out[at:end]
        elif kind == 3 and n:
            end = min(n, at + rng.randint(1, 128))
            out[at:at] = out[at:end] * rng.randint(1, 4)
        elif kind in (4, 5):
            token = rng.choice(TOKENS).encode("utf-8", "surrogatepass")
            out[at:at] = token
        elif kind == 6:
            lines = bytes(out).split(b"\n")
            if len(lines) > 1:
                i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
                choice = rng.randrange(3)
                if choice == 0:
                    del lines[i]
                elif choice == 1:
                    lines.insert(j, lines[i])
                else:
                    lines[i], lines[j] = lines[j], lines[i]
                out = bytearray(b"\n".join(lines))
        elif kind == 7 and others:
            other = rng.choice(others)
            if other:
                a = rng.randrange(len(other))
                out[at:at] = other[a : a + rng.randint(1, 200)]
        elif kind == 8:
            # a number replaced by an odd one
            digits = [m.start() for m in _DIGIT.finditer(out)]
            if digits:
                i = rng.choice(digits)
                out[i : i + 1] = rng.choice([b"0", b"-1", b"999999999999", b"1.5", b"1e3"])
    return bytes(out)


@dataclass
class Tally:
    """What one format's inputs did."""

    inputs: int = 0
    exits: dict[int, int] = field(default_factory=dict)
    tracebacks: int = 0
    other_exits: int = 0
    bad_stderr: int = 0
    hangs: int = 0
    api_foreign: int = 0
    seconds: float = 0.0
    slowest: float = 0.0
    failures: list[str] = field(default_factory=list)
    samples: list[bytes] = field(default_factory=list)
    """The first failing inputs, whole (to replay)."""

    def fail(self, line: str, data: bytes) -> None:
        self.failures.append(line)
        if len(self.samples) < 20:
            self.samples.append(data)

    def ok(self) -> bool:
        return not (
            self.tracebacks or self.other_exits or self.bad_stderr or self.hangs or self.api_foreign
        )


@contextlib.contextmanager
def _bounded(seconds: float) -> Iterator[None]:
    def ring(signum: int, frame: object) -> None:
        raise Hang

    old = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


class Workspace:
    """A scratch copy of ``examples/`` where mutated files are written and run."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        for sub in ("", "operators", "fleets", "native", "realworld", "repo"):
            (folder / sub).mkdir(parents=True, exist_ok=True)
        for models in (folder / "models", folder / "repo" / "models"):
            if not models.exists():
                models.symlink_to(EXAMPLES / "models")
        (folder / "repo" / "serve.yaml").write_bytes(REPO_SERVE.read_bytes())
        self.seeds = {name: [p.read_bytes() for p in f.seeds] for name, f in FORMATS.items()}
        self.seeds["command"] = [c.encode() for c in COMMANDS]
        self.seeds["stdin"] = self.seeds["serve"]
        self.seeds["repo"] = list(REPO_CONFIGS)
        self.plans = self._plans()
        self.seeds["diff"] = self.plans
        self.last_stderr = ""
        """What the last input wrote on stderr."""

    def _plans(self) -> list[bytes]:
        """Plan JSON of a few examples (``kvconfig export``), seeds of ``diff``."""
        out = []
        # run in examples/ with relative names: the plans (and so every input spliced from
        # them) are the same wherever the checkout lies, and a seed replays anywhere
        for path in FORMATS["export"].seeds:
            buf = io.StringIO()
            with contextlib.redirect_stderr(io.StringIO()), contextlib.chdir(EXAMPLES):
                main(["export", "--platform", "gh200", path.name], stdout=buf)
            out.append(buf.getvalue().encode())
        fleet = io.StringIO()
        with contextlib.redirect_stderr(io.StringIO()), contextlib.chdir(EXAMPLES):
            main(["lint", "--fleet", "--format", "json", "fleets/correct-pd.yaml"], stdout=fleet)
        if fleet.getvalue().strip():
            out.append(fleet.getvalue().encode())
        return [p for p in out if p.strip()]

    def path_for(self, fmt: str, index: int) -> Path:
        if fmt in FORMATS:
            seed = FORMATS[fmt].seeds[index % len(FORMATS[fmt].seeds)]
            if seed.is_relative_to(REALWORLD):
                return self.folder / "realworld" / seed.name
            return self.folder / seed.relative_to(EXAMPLES)
        if fmt == "repo":
            return self.folder / "repo" / (".kvconfig.toml", "pyproject.toml")[index % 2]
        return self.folder / f"input-{fmt}.txt"

    def run(self, fmt: str, data: bytes, index: int, tally: Tally) -> None:
        """One input of ``fmt`` through the command line (and the API), tallied."""
        path = self.path_for(fmt, index)
        stdin = None
        if fmt == "command":
            text = data.decode("utf-8", "replace")
            try:
                words = shlex.split(text)
            except ValueError:
                words = text.split()
            argv = ["lint", "--platform", "h200", "--allow-path", str(EXAMPLES), "--", *words]
            with contextlib.chdir(self.folder):
                self._one(fmt, _with_models(argv), None, tally, data)
            return
        if fmt == "diff":
            path.write_bytes(data)
            other = self.plans[index % len(self.plans)]
            (self.folder / "other.json").write_bytes(other)
            argv = ["diff", str(path), str(self.folder / "other.json")]
        elif fmt == "stdin":
            argv = ["lint", "--platform", "h200", "--allow-path", str(EXAMPLES), "-"]
            stdin = data
        elif fmt == "repo":
            path.write_bytes(data)
            (path.parent / ("pyproject.toml", ".kvconfig.toml")[index % 2]).unlink(True)
            with contextlib.chdir(path.parent):
                argv = ["lint", "--allow-path", str(EXAMPLES), "serve.yaml"]
                self._one(fmt, argv, None, tally, data)
            return
        else:
            path.write_bytes(data)
            argv = FORMATS[fmt].argv(path, self.folder)
        with contextlib.chdir(self.folder if fmt == "stdin" else ROOT):
            self._one(fmt, _with_models(argv, fmt), stdin, tally, data)
        if fmt in FORMATS and FORMATS[fmt].api:
            self._api(path, tally)

    def _one(
        self, fmt: str, argv: list[str], stdin: bytes | None, tally: Tally, data: bytes
    ) -> None:
        out, err = io.StringIO(), io.StringIO()
        t0 = time.perf_counter()
        code: int | None = None
        real_stdin = sys.stdin
        try:
            if stdin is not None:
                sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8", errors="strict")
            with _bounded(TIME_BOUND), contextlib.redirect_stderr(err):
                code = main(argv, stdout=out)
        except Hang:
            tally.hangs += 1
            tally.fail(f"{fmt}: hang on {data[:200]!r}", data)
        except BaseException as exc:  # an exception out of main is a traceback
            tally.tracebacks += 1
            tally.fail(f"{fmt}: {type(exc).__name__}: {exc} on {data[:200]!r}", data)
        finally:
            sys.stdin = real_stdin
        dt = time.perf_counter() - t0
        tally.inputs += 1
        tally.seconds += dt
        tally.slowest = max(tally.slowest, dt)
        if code is None:
            return
        tally.exits[code] = tally.exits.get(code, 0) + 1
        text = self.last_stderr = err.getvalue()
        if "Traceback" in text:
            tally.tracebacks += 1
            tally.fail(f"{fmt}: traceback on {data[:200]!r}", data)
        if code not in (0, 1, 2) or INTERNAL_ERROR in text:
            tally.other_exits += 1
            tally.fail(f"{fmt}: exit {code}: {text.strip()[:300]} on {data[:200]!r}", data)
        elif code == 2:
            lines = text.splitlines()
            if (
                not lines
                or not all(line.startswith("kvconfig: ") for line in lines)
                or (argv[0] != "lint" and len(lines) != 1)
            ):
                tally.bad_stderr += 1
                tally.fail(f"{fmt}: stderr {text[:300]!r} on {data[:200]!r}", data)

    def _api(self, path: Path, tally: Tally) -> None:
        from kvconfig.api import load_deployment, resolve
        from kvconfig.errors import KVConfigError

        try:
            with _bounded(TIME_BOUND):
                resolve(load_deployment(path, platform="h200"))
        except KVConfigError:
            pass
        except Hang:
            tally.hangs += 1
            tally.fail(f"api: hang on {path.read_bytes()[:200]!r}", path.read_bytes())
        except Exception as exc:
            tally.api_foreign += 1
            tally.fail(
                f"api: {type(exc).__name__}: {exc} on {path.read_bytes()[:200]!r}",
                path.read_bytes(),
            )


def fuzz(
    work: Workspace,
    fmt: str,
    count: int,
    seed: int = 0,
    *,
    progress: Callable[[Tally], None] | None = None,
) -> Tally:
    """``count`` mutated inputs of ``fmt`` (seeded by ``seed``), tallied."""
    rng = random.Random(f"{fmt}-{seed}")
    seeds = work.seeds[fmt]
    others = [s for seeds_ in work.seeds.values() for s in seeds_]
    tally = Tally()
    for i in range(count):
        index = rng.randrange(len(seeds))
        data = mutate(seeds[index], rng, others)
        work.run(fmt, data, index, tally)
        if progress is not None and (i + 1) % 1000 == 0:
            progress(tally)
    return tally


def report(tallies: dict[str, Tally]) -> str:
    """The figures as JSON lines (one per format)."""
    rows = []
    for fmt, t in tallies.items():
        rows.append(
            json.dumps(
                {
                    "format": fmt,
                    "inputs": t.inputs,
                    "exits": {str(k): v for k, v in sorted(t.exits.items())},
                    "tracebacks": t.tracebacks,
                    "other_exits": t.other_exits,
                    "bad_stderr": t.bad_stderr,
                    "hangs": t.hangs,
                    "api_foreign_exceptions": t.api_foreign,
                    "seconds": round(t.seconds, 1),
                    "slowest_s": round(t.slowest, 3),
                }
            )
        )
    return "\n".join(rows)
