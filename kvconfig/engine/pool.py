"""Engine children: start them, feed them deployments, collect their answers.

vLLM's import is slow and changes process state (its platform, its distributed groups,
its caches), so start-ups run in child processes (``kvconfig.engine.child``), never in
the caller. A child emulates one GPU in one process environment and serves every
deployment that shares them, one after the other; ``jobs`` children run at once.

A child is contained (docs/security.md):

* its environment is built here, never inherited: the deployment's variables that change
  the plan (``plan_variable``: ``VLLM_*`` and ``LIBRARY_VARIABLES``, never ``LD_*``,
  ``PYTHON*`` or a path), ``PASSED_ON`` of the caller's, kvconfig's own hook settings,
  and every home, cache and temporary folder (HOME, XDG, TMPDIR, vLLM, Triton, Inductor,
  FlashInfer, CUDA) inside the child's scratch folder;
* Python runs isolated (``-I``: no ``PYTHONPATH``, ``sitecustomize`` from it, user site or
  working folder on the path) with the root of the kvconfig that started it first on its
  path; the child checks that it imported that kvconfig;
* the Hugging Face Hub is offline and proxies point at a closed port unless downloads
  were allowed;
* vLLM runs no code from a model's folder unless the pool was made with
  ``trust_remote_code`` (kvconfig's ``--trust-remote-code``);
* each child leads its own session; closing it kills the session's group and any process
  that still carries the child's ``KVCONFIG_ENGINE_SCRATCH``; closing the pool removes
  the scratch folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any

from kvconfig.engine.request import Answer, Gpu, Request
from kvconfig.engine.sandbox import (
    CHILD_CODE,
    SCRATCH_VARIABLE,
    child_env,
    end_processes,
    plan_variable,
    processes_of,
    root,
)
from kvconfig.errors import InputError

__all__ = [
    "SCRATCH_VARIABLE",
    "Answer",
    "Gpu",
    "Pool",
    "Request",
    "child_env",
    "end_processes",
    "plan_variable",
    "pool",
    "processes_of",
]

START_TIMEOUT = 300.0
"""Seconds a child may take to import vLLM and install the emulation."""


class _Child:
    """One running engine child, leader of its own session."""

    def __init__(self, request: Request, scratch: Path, python: str, setup: Mapping[str, Any]):
        self.key = request.key()
        folder = Path(tempfile.mkdtemp(prefix="child-", dir=scratch))
        self.folder = folder
        self.log_path = folder / "stderr.log"
        self._log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [python, "-I", "-B", "-u", "-c", CHILD_CODE, root()],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=child_env(request, folder),
            cwd=str(folder),
            start_new_session=True,
        )
        try:
            self._send({**setup, "scratch": str(folder)})
            ready = self._receive(START_TIMEOUT)
        except (OSError, ValueError):  # the child died before it read its set-up
            ready = None
        if ready is None or not ready.get("ready"):
            tail = self.log_tail()
            self.close()
            raise InputError(
                f"vLLM's start-up could not begin: {tail}",
                key="--engine",
                hint="check that vLLM imports (python -c 'import vllm'), or use --engine offline",
            )
        if ready.get("kvconfig") != root():
            self.close()
            raise InputError(
                f"the engine child imported kvconfig from {ready.get('kvconfig')}, "
                f"not from {root()}",
                key="--engine",
                hint="run kvconfig from one installation",
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
        """End the child and every process of its session, then the stragglers that left
        it (found by their ``KVCONFIG_ENGINE_SCRATCH``)."""
        with contextlib.suppress(Exception):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=10)
        with contextlib.suppress(OSError):
            # the session's group outlives its leader while any member is alive
            os.killpg(self.proc.pid, signal.SIGKILL)
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        end_processes(self.folder)
        for stream in (self.proc.stdout, self._log):
            with contextlib.suppress(Exception):
                if stream is not None:
                    stream.close()


class Pool:
    """Engine children for a batch of requests; use as a context manager."""

    def __init__(
        self,
        jobs: int = 1,
        timeout: float = 300.0,
        python: str | None = None,
        *,
        trust_remote_code: bool = False,
    ) -> None:
        self.jobs = max(1, jobs)
        self.timeout = timeout
        self.python = python or sys.executable
        self.trust_remote_code = trust_remote_code
        """vLLM may run code from a model's folder (kvconfig's ``--trust-remote-code``)."""
        self._scratch = Path(tempfile.mkdtemp(prefix="kvconfig-engine-"))
        self._driver: Path | None = None
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
        end_processes(self._scratch)
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
            if self._driver is None:
                from kvconfig.engine.driver import stub_driver

                try:
                    self._driver = stub_driver(self._scratch / "driver")
                except RuntimeError as err:
                    raise InputError(
                        str(err), key="--engine", hint="or use --engine offline"
                    ) from None
        setup = {
            "gpu": {
                "name": request.gpu.name,
                "capability": list(request.gpu.capability),
                "memory_bytes": request.gpu.memory_bytes,
            },
            "cubins": request.cubins,
            "driver": str(self._driver),
            "trust_remote_code": self.trust_remote_code,
        }
        return _Child(request, self._scratch, self.python, setup)

    def _release(self, child: _Child) -> None:
        if not child.alive():
            child.close()
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
def pool(
    jobs: int = 1, timeout: float = 300.0, *, trust_remote_code: bool = False
) -> Iterator[Pool]:
    """A pool of engine children, closed (children stopped, scratch removed) on exit."""
    p = Pool(jobs=jobs, timeout=timeout, trust_remote_code=trust_remote_code)
    try:
        yield p
    finally:
        p.close()
