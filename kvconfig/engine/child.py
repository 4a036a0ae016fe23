"""The engine child: ``python -m kvconfig.engine.child``, one emulated GPU, many deployments.

The parent (``kvconfig.engine.pool``) starts one child per emulated GPU and process
environment. The child reads JSON lines on stdin: first its set-up (the GPU, the
FlashInfer cubin setting, the stub CUDA driver, its scratch folder, whether vLLM may run
code from a model's folder), then one request per line
(``{"id", "argv", "cwd"}``), and answers each request with one JSON line on the stdout
it was started with; its ready line names the kvconfig root it imported. vLLM's own
output (it logs to stdout) goes to stderr.

An answer is ``{"id", "status": "ok", "facts"}``, ``{"id", "status": "refused", "step",
"error", "message", "facts"}`` (vLLM raised) or ``{"id", "status": "arguments",
"message"}`` (vLLM's parser rejected the command).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any, NoReturn, TextIO


def _answer(out: TextIO, message: dict[str, Any]) -> None:
    out.write(json.dumps(message) + "\n")
    out.flush()


def _one(request: dict[str, Any]) -> dict[str, Any]:
    from kvconfig.engine import startup

    cwd = request.get("cwd")
    if cwd:
        os.chdir(cwd)
    t0 = time.perf_counter()
    answer = startup.start([str(a) for a in request["argv"]])
    return {"id": request.get("id"), **answer, "seconds": time.perf_counter() - t0}


def main() -> NoReturn:
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    setup = json.loads(sys.stdin.readline())
    t0 = time.perf_counter()
    from kvconfig.engine import emulate, startup
    from kvconfig.engine.pool import Gpu

    gpu = Gpu(
        name=setup["gpu"]["name"],
        capability=(int(setup["gpu"]["capability"][0]), int(setup["gpu"]["capability"][1])),
        memory_bytes=int(setup["gpu"]["memory_bytes"]),
    )
    emulate.install(
        gpu,
        cubins=bool(setup["cubins"]),
        driver=Path(setup["driver"]),
        scratch=Path(setup["scratch"]),
    )
    startup.remember_runners()
    startup.TRUST_REMOTE_CODE = setup.get("trust_remote_code") is True
    import vllm

    import kvconfig

    _answer(
        out,
        {
            "ready": True,
            "vllm_version": vllm.__version__,
            "kvconfig": str(Path(kvconfig.__file__).resolve().parents[1]),
            "seconds": time.perf_counter() - t0,
        },
    )
    for line in sys.stdin:
        if not line.strip():
            continue
        _answer(out, _one(json.loads(line)))
    # every start-up was torn down and answered: skip the interpreter's shutdown of vLLM's
    # and torch's modules and threads (seconds), which nothing here needs
    out.close()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
