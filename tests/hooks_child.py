"""A process for tests/test_hooks_fail_closed.py: vLLM 0.33.0's real start-up
(``kvconfig.engine.startup``, as an engine child runs it, under the emulated GPU), the
kvconfig hooks loaded by vLLM's own plugin loader, after one of vLLM's functions that
kvconfig's hooks call (and vLLM's start-up does not, through that name) was made to raise.

    python tests/hooks_child.py REQUEST.json

REQUEST: ``{"setup": <the engine child's set-up>, "cwd", "runs": [{"inject", "argv",
"modes"}]}``. ``inject`` is ``prepare`` (``vllm.v1.worker.utils.prepare_kernel_block_sizes``,
which the hooks call to recompute the runner's kernel block sizes; the runner calls the
binding ``vllm.v1.worker.gpu.attn_utils`` imported) or ``connector``
(``vllm.distributed.kv_transfer.kv_connector.utils.get_current_attn_backends_and_specs``,
which the hooks call to read the connector's backends; the connector calls the binding
its module imported). One JSON line on stdout: per run and mode, the start-up's answer
and ``hooks.status()``.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from pathlib import Path
from typing import Any

#: module -> (attribute, the modules that must hold vLLM's own binding first)
TARGETS = {
    "prepare": (
        "vllm.v1.worker.utils",
        "prepare_kernel_block_sizes",
        ("vllm.v1.worker.gpu.attn_utils", "vllm.v1.worker.gpu_model_runner"),
    ),
    "connector": (
        "vllm.distributed.kv_transfer.kv_connector.utils",
        "get_current_attn_backends_and_specs",
        (
            "vllm.distributed.kv_transfer.kv_connector.v1.nixl.base_worker",
            "vllm.distributed.kv_transfer.kv_connector.v1.mooncake.mooncake_connector",
        ),
    ),
}


def _unreadable(name: str) -> Any:
    """A function with the signature of vLLM's ``name`` that raises."""

    def prepare_kernel_block_sizes(kv_cache_config: Any, attn_groups: Any) -> Any:
        raise RuntimeError(f"injected: vLLM's {name} is unreadable")

    def get_current_attn_backends_and_specs(
        vllm_config: Any, kv_cache_config: Any, fallback: Any
    ) -> Any:
        raise RuntimeError(f"injected: vLLM's {name} is unreadable")

    return {
        "prepare_kernel_block_sizes": prepare_kernel_block_sizes,
        "get_current_attn_backends_and_specs": get_current_attn_backends_and_specs,
    }[name]


def _measured_with(module: Any, attr: str, real: Any, broken: Any) -> Any:
    """The engine mode's readout of the built engine (``kvconfig.engine.readout.read``,
    the measurement, not the hooks) with vLLM's own function back in place."""
    from kvconfig.engine import readout

    read = readout.read

    def measured(*args: Any, **kwargs: Any) -> Any:
        setattr(module, attr, real)
        try:
            return read(*args, **kwargs)
        finally:
            setattr(module, attr, broken)

    return measured


def main() -> None:
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    request = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    setup = request["setup"]
    from kvconfig.engine import emulate, readout, startup
    from kvconfig.engine.pool import Gpu

    real_read = readout.read

    gpu = Gpu(
        name=setup["gpu"]["name"],
        capability=(int(setup["gpu"]["capability"][0]), int(setup["gpu"]["capability"][1])),
        memory_bytes=int(setup["gpu"]["memory_bytes"]),
    )
    emulate.install(gpu, cubins=False, driver=Path(setup["driver"]), scratch=Path(setup["scratch"]))
    startup.remember_runners()
    os.chdir(request["cwd"])
    results = []
    for run in request["runs"]:
        module_name, attr, holders = TARGETS[run["inject"]]
        for holder in holders:
            importlib.import_module(holder)
        module = importlib.import_module(module_name)
        real = getattr(module, attr)
        broken = _unreadable(attr)
        setattr(module, attr, broken)
        readout.read = _measured_with(module, attr, real, broken)
        try:
            for mode in run["modes"]:
                os.environ["KVCONFIG_MODE"] = mode
                hooks = sys.modules.get("kvconfig.hooks")
                before = 0
                if hooks is not None:  # vLLM loads its plugins once per process
                    hooks.install(mode)
                    before = len(hooks.status().unchecked)
                answer = startup.start(list(run["argv"]))
                hooks = sys.modules.get("kvconfig.hooks")  # loaded by vLLM's plugin loader
                status = hooks.status() if hooks is not None else None
                facts = answer.get("facts") or {}
                results.append(
                    {
                        "inject": run["inject"],
                        "mode": mode,
                        "status": answer["status"],
                        "error": answer.get("error"),
                        "message": answer.get("message"),
                        "nixl": (facts.get("connectors") or {}).get("nixl"),
                        "loaded": hooks is not None,
                        "hooks_mode": None if status is None else status.mode,
                        "active": None if status is None else status.active,
                        "unchecked": [] if status is None else list(status.unchecked[before:]),
                    }
                )
        finally:
            setattr(module, attr, real)
            readout.read = real_read
    out.write(json.dumps(results) + "\n")
    out.close()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
