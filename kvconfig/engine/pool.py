"""Engine children: start them, feed them deployments, collect their answers.

vLLM's import is slow and changes process state (its platform, its distributed groups,
its caches), so start-ups run in child processes (``kvconfig.engine.child``), never in
the caller. A child emulates one GPU in one process environment and serves every
deployment that shares them, one after the other; ``jobs`` children run at once.

A child's environment is built here, not inherited: the deployment's own variables,
the Hugging Face cache settings, the kvconfig hooks' mode (``off`` unless the kvconfig
hooks are assumed installed), and private cache folders for vLLM, Triton and torch
under one scratch folder that is removed when the pool closes. The Hugging Face Hub is
offline unless downloads were allowed.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from kvconfig.errors import InputError

#: Variables of the caller's environment a child keeps (everything else is dropped).
PASSED_ON = (
    "PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "USER",
    "HF_HOME", "HF_HUB_CACHE", "HF_ENDPOINT", "HF_TOKEN", "HF_HUB_OFFLINE",
    "HUGGINGFACE_HUB_CACHE", "CC",
)  # fmt: skip

START_TIMEOUT = 300.0
"""Seconds a child may take to import vLLM and install the emulation."""


@dataclass(frozen=True, slots=True)
class Gpu:
    """The GPU a child emulates (as ``torch.cuda`` names it)."""

    name: str
    capability: tuple[int, int]
    memory_bytes: int
    count: int = 8
    """Devices the host reports (tensor parallelism needs that many)."""


@dataclass(frozen=True, slots=True)
class Request:
    """One deployment for vLLM's start-up."""

    argv: tuple[str, ...]
    """What follows ``vllm serve`` on the command line."""
    cwd: str
    """The working folder vLLM starts in (relative paths resolve from it)."""
    gpu: Gpu
    env: Mapping[str, str] = field(default_factory=dict)
    """The deployment's own environment variables."""
    cubins: bool = True
    """FlashInfer's TRTLLM cubins are reachable (``has_nvidia_artifactory``)."""
    hooks: str = "none"
    """``none``: the kvconfig hooks are off; ``enforce``, ``strict`` or ``warn``: vLLM's
    plugin loader loads them in that mode (``KVCONFIG_MODE``)."""
    download: bool = False
    """Allow the Hugging Face Hub (otherwise local folders and the cache only)."""

    def key(self) -> tuple[object, ...]:
        """Requests with the same key can share one child."""
        return (self.gpu, self.cubins, self.hooks, self.download, tuple(sorted(self.env.items())))


@dataclass(frozen=True, slots=True)
class Answer:
    """A child's answer to one request (see ``kvconfig.engine.child``)."""

    status: str
    """``ok``, ``refused`` (vLLM raised), ``arguments`` (vLLM's parser rejected the
    command), ``timeout`` or ``crashed`` (the child died)."""
    data: Mapping[str, Any]
    vllm_version: str | None = None
    seconds: float = 0.0


def _cache_folder() -> Path:
    base = os.environ.get("KVCONFIG_CACHE") or str(Path.home() / ".cache" / "kvconfig")
    return Path(base) / "engine"


def _child_env(request: Request, scratch: Path) -> dict[str, str]:
    env = {k: os.environ[k] for k in PASSED_ON if k in os.environ}
    env.update(request.env)
    root = Path(__file__).resolve().parents[2]
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    env["KVCONFIG_MODE"] = "off" if request.hooks == "none" else request.hooks
    env.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    env["VLLM_NO_USAGE_STATS"] = "1"
    env["VLLM_DO_NOT_TRACK"] = "1"
    env["VLLM_CACHE_ROOT"] = str(scratch / "vllm")
    env["VLLM_CONFIG_ROOT"] = str(scratch / "vllm-config")
    env["TRITON_CACHE_DIR"] = str(_cache_folder() / "triton")
    env["TORCHINDUCTOR_CACHE_DIR"] = str(scratch / "inductor")
    env["TORCHDYNAMO_DISABLE"] = "1"
    env["TMPDIR"] = str(scratch / "tmp")
    (scratch / "tmp").mkdir(parents=True, exist_ok=True)
    if not request.download:
        env["HF_HUB_OFFLINE"] = "1"
        env["TRANSFORMERS_OFFLINE"] = "1"
    return env


class _Child:
    """One running engine child."""

    def __init__(self, request: Request, scratch: Path, python: str) -> None:
        self.key = request.key()
        folder = Path(tempfile.mkdtemp(prefix="child-", dir=scratch))
        self.log_path = folder / "stderr.log"
        self._log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [python, "-m", "kvconfig.engine.child"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=_child_env(request, folder),
            cwd=str(folder),
        )
        setup = {
            "gpu": {
                "name": request.gpu.name,
                "capability": list(request.gpu.capability),
                "memory_bytes": request.gpu.memory_bytes,
            },
            "cubins": request.cubins,
            "cache": str(_cache_folder()),
            "scratch": str(folder),
        }
        self._send(setup)
        ready = self._receive(START_TIMEOUT)
        if ready is None or not ready.get("ready"):
            tail = self.log_tail()
            self.close()
            raise InputError(
                f"vLLM's start-up could not begin: {tail}",
                key="--engine",
                hint="check that vLLM imports (python -c 'import vllm'), or use --engine offline",
            )
        self.vllm_version = str(ready.get("vllm_version"))

    def _send(self, message: Mapping[str, Any]) -> None:
        stdin = self.proc.stdin
        assert stdin is not None
        stdin.write((json.dumps(message) + "\n").encode())
        stdin.flush()

    def _receive(self, timeout: float) -> dict[str, Any] | None:
        stdout: IO[bytes] | None = self.proc.stdout
        assert stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(stdout, selectors.EVENT_READ)
        try:
            if not sel.select(timeout):
                return None
            line = stdout.readline()
        finally:
            sel.close()
        if not line:
            return None
        data: dict[str, Any] = json.loads(line)
        return data

    def log_tail(self, lines: int = 3) -> str:
        """The last lines the child wrote to stderr."""
        with contextlib.suppress(OSError):
            text = self.log_path.read_text(errors="replace").strip().splitlines()
            useful = [t for t in text if t.strip() and not t.startswith("W1")]
            return " | ".join(useful[-lines:]) or "no output"
        return "no output"

    def ask(self, request: Request, timeout: float) -> Answer:
        t0 = time.perf_counter()
        self._send({"id": 0, "argv": list(request.argv), "cwd": request.cwd})
        data = self._receive(timeout)
        seconds = time.perf_counter() - t0
        if data is None:
            alive = self.proc.poll() is None
            status = "timeout" if alive else "crashed"
            message = (
                f"vLLM's start-up took longer than {timeout:.0f} s"
                if alive
                else f"the engine child died ({self.log_tail()})"
            )
            self.close()
            return Answer(status, {"message": message}, self.vllm_version, seconds)
        return Answer(str(data["status"]), data, self.vllm_version, seconds)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        with contextlib.suppress(Exception):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=10)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._log.close()


class Pool:
    """Engine children for a batch of requests; use as a context manager."""

    def __init__(self, jobs: int = 1, timeout: float = 300.0, python: str | None = None) -> None:
        self.jobs = max(1, jobs)
        self.timeout = timeout
        self.python = python or sys.executable
        self._scratch = Path(tempfile.mkdtemp(prefix="kvconfig-engine-"))
        self._idle: list[_Child] = []
        self.started = 0
        """Children started so far."""
        self._lock = threading.Lock()

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop every child and remove the scratch folder."""
        with self._lock:
            children, self._idle = self._idle, []
        for child in children:
            child.close()
        if os.environ.get("KVCONFIG_ENGINE_LOG"):
            print(f"kvconfig: the engine children's logs are in {self._scratch}", file=sys.stderr)
            return
        shutil.rmtree(self._scratch, ignore_errors=True)

    def _child(self, request: Request) -> _Child:
        with self._lock:
            for i, child in enumerate(self._idle):
                if child.key == request.key() and child.alive():
                    return self._idle.pop(i)
            self.started += 1
        return _Child(request, self._scratch, self.python)

    def _release(self, child: _Child) -> None:
        if not child.alive():
            return
        with self._lock:
            self._idle.append(child)
            while len(self._idle) > self.jobs:
                self._idle.pop(0).close()

    def ask(self, request: Request) -> Answer:
        """vLLM's start-up of one deployment."""
        child = self._child(request)
        try:
            answer = child.ask(request, self.timeout)
        except BaseException:
            child.close()
            raise
        self._release(child)
        return answer

    def ask_all(self, requests: Sequence[Request]) -> list[Answer]:
        """Every request, answers in request order. Requests that share a child run one
        after the other in it; up to ``jobs`` children run at once."""
        by_key: dict[tuple[object, ...], list[int]] = {}
        for i, request in enumerate(requests):
            by_key.setdefault(request.key(), []).append(i)
        answers: dict[int, Answer] = {}

        def serve(indices: list[int]) -> None:
            for i in indices:
                answers[i] = self.ask(requests[i])

        batches = list(by_key.values())
        if self.jobs == 1 or len(batches) == 1:
            for batch in batches:
                serve(batch)
        else:
            with ThreadPoolExecutor(max_workers=self.jobs) as executor:
                list(executor.map(serve, batches))
        return [answers[i] for i in range(len(requests))]


@contextlib.contextmanager
def pool(jobs: int = 1, timeout: float = 300.0) -> Iterator[Pool]:
    """A pool of engine children, closed (children stopped, scratch removed) on exit."""
    p = Pool(jobs=jobs, timeout=timeout)
    try:
        yield p
    finally:
        p.close()
