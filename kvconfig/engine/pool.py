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
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from kvconfig.errors import InputError

#: Of the caller's environment, what every child keeps: the command search path (the C
#: compiler), the locale and the C compiler's name. Nothing else of it is passed on.
PASSED_ON = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "CC")

#: The caller's Hugging Face credentials and Hub address: passed on only with downloads.
DOWNLOAD_ONLY = ("HF_ENDPOINT", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")

#: Library variables (other than ``VLLM_*``) that change the plan vLLM's start-up builds.
LIBRARY_VARIABLES = ("CUDA_VISIBLE_DEVICES",)

#: Endings of ``VLLM_*`` names that name a file, folder, address or shared library: such a
#: variable never reaches a child (it would point vLLM outside the scratch folder).
OUTSIDE = (
    "PATH", "DIR", "DIRS", "ROOT", "FILE", "FOLDER", "CACHE", "URL", "URI", "HOST", "IP",
    "PORT", "ADDR", "ENDPOINT", "SO", "LIB", "SERVER", "MODELSCOPE",
)  # fmt: skip

SCRATCH_VARIABLE = "KVCONFIG_ENGINE_SCRATCH"
"""Set in every child to its scratch folder: whatever the child starts inherits it, so the
pool finds and ends them at close even if they left the child's session."""


def plan_variable(name: str, value: str) -> bool:
    """Whether a deployment's environment variable reaches vLLM's start-up in a child.

    Only variables that change the plan pass: ``VLLM_*`` (except those that name a file,
    folder, address or library, by name or by a value with a ``/``) and
    ``LIBRARY_VARIABLES``. Never ``LD_*``, ``PYTHON*``, proxies, ``HOME`` or anything else a
    deployment names."""
    if name in LIBRARY_VARIABLES:
        return "/" not in value
    if not name.startswith("VLLM_") or "/" in value or "\0" in value:
        return False
    return not any(name.endswith(f"_{end}") for end in OUTSIDE)


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
    """The deployment's own environment variables (only ``plan_variable`` ones reach
    vLLM)."""
    settings: Mapping[str, str] = field(default_factory=dict)
    """kvconfig's own ``KVCONFIG_*`` settings for the hooks in the child, from kvconfig's
    caller (never from a linted file), e.g. ``KVCONFIG_PLAN_EXPORT``."""
    cubins: bool = True
    """FlashInfer's TRTLLM cubins are reachable (``has_nvidia_artifactory``)."""
    hooks: str = "none"
    """``none``: the kvconfig hooks are off; ``enforce``, ``strict`` or ``warn``: vLLM's
    plugin loader loads them in that mode (``KVCONFIG_MODE``)."""
    download: bool = False
    """Allow the Hugging Face Hub (otherwise local folders and the cache only)."""

    def key(self) -> tuple[object, ...]:
        """Requests with the same key can share one child."""
        return (
            self.gpu,
            self.cubins,
            self.hooks,
            self.download,
            tuple(sorted(self.env.items())),
            tuple(sorted(self.settings.items())),
        )


@dataclass(frozen=True, slots=True)
class Answer:
    """A child's answer to one request (see ``kvconfig.engine.child``)."""

    status: str
    """``ok``, ``refused`` (vLLM raised), ``arguments`` (vLLM's parser rejected the
    command), ``timeout`` or ``crashed`` (the child died)."""
    data: Mapping[str, Any]
    vllm_version: str | None = None
    seconds: float = 0.0


def _hub_cache() -> str:
    """The caller's Hugging Face hub cache folder (a child reads models by id from it)."""
    env = os.environ
    if env.get("HF_HUB_CACHE") or env.get("HUGGINGFACE_HUB_CACHE"):
        return env.get("HF_HUB_CACHE") or env["HUGGINGFACE_HUB_CACHE"]
    home = env.get("HF_HOME") or str(
        Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "huggingface"
    )
    return str(Path(home) / "hub")


def child_env(request: Request, scratch: Path) -> dict[str, str]:
    """A child's whole environment: the deployment's plan variables (``plan_variable``),
    kvconfig's own settings for the hooks, and every home, cache and temporary folder
    inside ``scratch``. Python's own variables are not used (the child runs ``-I``)."""
    env = {k: os.environ[k] for k in PASSED_ON if k in os.environ}
    env.update({k: v for k, v in request.env.items() if plan_variable(k, v)})
    env.update({k: v for k, v in request.settings.items() if k.startswith("KVCONFIG_")})
    home = scratch / "home"
    folders = {
        "HOME": home,
        "XDG_CACHE_HOME": home / ".cache",
        "XDG_CONFIG_HOME": home / ".config",
        "XDG_DATA_HOME": home / ".local" / "share",
        "XDG_STATE_HOME": home / ".local" / "state",
        "XDG_RUNTIME_DIR": scratch / "run",
        "TMPDIR": scratch / "tmp",
        "VLLM_CACHE_ROOT": scratch / "vllm",
        "VLLM_CONFIG_ROOT": scratch / "vllm-config",
        "VLLM_ASSETS_CACHE": scratch / "vllm" / "assets",
        "VLLM_RPC_BASE_PATH": scratch / "run",
        "TRITON_HOME": home,
        "TRITON_CACHE_DIR": scratch / "triton",
        "TORCHINDUCTOR_CACHE_DIR": scratch / "inductor",
        "TORCH_EXTENSIONS_DIR": scratch / "torch-extensions",
        "FLASHINFER_WORKSPACE_BASE": home,
        "CUDA_CACHE_PATH": scratch / "cuda",
        "NUMBA_CACHE_DIR": scratch / "numba",
        "MPLCONFIGDIR": scratch / "matplotlib",
        "HF_HOME": scratch / "huggingface",
    }
    for name, folder in folders.items():
        folder.mkdir(parents=True, exist_ok=True)
        env[name] = str(folder)
    env[SCRATCH_VARIABLE] = str(scratch)
    env["HF_HUB_CACHE"] = _hub_cache()
    env["KVCONFIG_MODE"] = "off" if request.hooks == "none" else request.hooks
    env.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    env["VLLM_NO_USAGE_STATS"] = "1"
    env["VLLM_DO_NOT_TRACK"] = "1"
    env["DO_NOT_TRACK"] = "1"
    env["VLLM_USE_MODELSCOPE"] = "False"
    env["TORCHDYNAMO_DISABLE"] = "1"
    if request.download:
        env.update({k: os.environ[k] for k in DOWNLOAD_ONLY if k in os.environ})
    else:
        for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
            env[name] = "1"
        # whatever still tries the network meets a closed port
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
            env[name] = "http://127.0.0.1:9"
        env["NO_PROXY"] = env["no_proxy"] = ""
    return env


def _root() -> str:
    """The folder the running ``kvconfig`` package is imported from."""
    return str(Path(__file__).resolve().parents[2])


#: The child's command: Python isolated from every ``PYTHON*`` variable, the user's site
#: folder and the working folder (``-I``), writing no bytecode (``-B``), unbuffered;
#: kvconfig's root first on its path.
CHILD_CODE = (
    "import sys; sys.path.insert(0, sys.argv[1]); from kvconfig.engine.child import main; main()"
)


def processes_of(scratch: Path) -> list[int]:
    """Processes (other than this one) whose environment names ``scratch`` as their
    ``KVCONFIG_ENGINE_SCRATCH``: a child and everything it started, wherever they went."""
    marker = f"{SCRATCH_VARIABLE}={scratch}".encode()
    found = []
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                with open(f"/proc/{entry.name}/environ", "rb") as fh:
                    words = fh.read().split(b"\0")
            except OSError:
                continue
            if any(w == marker or w.startswith(marker + b"/") for w in words):
                found.append(int(entry.name))
    return found


def end_processes(scratch: Path) -> None:
    """Kill every process ``processes_of(scratch)`` finds (until none is left)."""
    for _ in range(50):
        pids = processes_of(scratch)
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)


class _Child:
    """One running engine child, leader of its own session."""

    def __init__(self, request: Request, scratch: Path, python: str, setup: Mapping[str, Any]):
        self.key = request.key()
        folder = Path(tempfile.mkdtemp(prefix="child-", dir=scratch))
        self.folder = folder
        self.log_path = folder / "stderr.log"
        self._log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [python, "-I", "-B", "-u", "-c", CHILD_CODE, _root()],
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
        if ready.get("kvconfig") != _root():
            self.close()
            raise InputError(
                f"the engine child imported kvconfig from {ready.get('kvconfig')}, "
                f"not from {_root()}",
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
