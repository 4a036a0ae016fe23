"""One deployment through vLLM's own start-up, up to the allocated KV cache.

The steps are vLLM's, in vLLM's order, with its own code:

1. ``parse``: the ``vllm serve`` parser (``FlexibleArgumentParser`` with the serve
   sub-command's arguments, ``make_arg_parser``), so ``--config``, dashes and
   underscores, ``--k=v``, repeated options and dotted keys mean what they mean to vLLM;
   then the serve sub-command's own validation.
2. ``config``: ``AsyncEngineArgs.from_cli_args(...).create_engine_config()``.
3. ``engine``: vLLM's ``EngineCore`` with the in-process executor: the worker builds the
   target and draft model classes (on the meta device), each attention layer picks its
   backend through vLLM's selector, the executor settles the block size
   (``update_block_size_for_backend``), the engine core groups the layers' specs and
   sizes the KV cache (``get_kv_cache_configs``), and the worker initialises it: the
   runner's vote (``init_attn_backend`` in Model Runner V2, ``initialize_kv_cache`` in
   V1), the speculator's ``set_attn``, and ``init_kv_cache`` on meta tensors. The
   scheduler is built as well, so the engine core reports its block sizes.

An exception raised by vLLM in any step is vLLM refusing the deployment: it comes back
with the step, the exception's type and vLLM's text, and whatever the runner had
decided by then. An exception raised by kvconfig's own engine code (``kvconfig/engine``:
the lookup of vLLM's parser, the emulation, the readout) is not vLLM's answer: it comes
back as ``{"status": "machinery"}``, which the parent reports as an input error, never as
a refusal. Runs in the engine child (imports vLLM).
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import sys
import time
import traceback
from collections.abc import Iterator
from typing import Any

from kvconfig.engine import readout
from kvconfig.errors import MachineryError


def serve_function(name: str) -> Any:
    """``make_arg_parser`` or ``validate_parsed_serve_args`` of the installed vLLM."""
    from kvconfig.mirror.versions import SERVE_ARGUMENTS

    for module in (*SERVE_ARGUMENTS, "vllm.entrypoints.cli.serve"):
        try:
            found = getattr(importlib.import_module(module), name, None)
        except ModuleNotFoundError as err:
            if err.name is None or not module.startswith(err.name):
                raise
            continue
        if found is not None:
            return found
    raise MachineryError(
        f"kvconfig cannot find {name} of vLLM's serve command in vLLM "
        f"{_installed_version()} (looked in {', '.join(SERVE_ARGUMENTS)} and "
        "vllm.entrypoints.cli.serve)"
    )


def _installed_version() -> str:
    import vllm

    return str(getattr(vllm, "__version__", "?"))


def _parser() -> Any:
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    make_arg_parser = serve_function("make_arg_parser")

    top = FlexibleArgumentParser(prog="vllm")
    subs = top.add_subparsers(dest="subparser", required=True)
    serve = subs.add_parser("serve", usage="vllm serve [model_tag] [options]")
    make_arg_parser(serve)
    return top


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[io.StringIO]:
    buf = io.StringIO()
    with contextlib.redirect_stderr(buf):
        yield buf


def parse(argv: list[str]) -> Any | str:
    """vLLM's parse of ``vllm serve ARGV``, or the message its parser exits with."""
    validate_parsed_serve_args = serve_function("validate_parsed_serve_args")
    parser = _parser()
    with _quiet_stderr() as err:
        try:
            args = parser.parse_args(["serve", *argv])
        except SystemExit:
            lines = [line for line in err.getvalue().strip().splitlines() if line.strip()]
            return lines[-1] if lines else "vLLM's parser rejected the arguments"
    if getattr(args, "model_tag", None) is not None:
        args.model = args.model_tag
    validate_parsed_serve_args(args)
    return args


TRUST_REMOTE_CODE = False
"""vLLM may run code from a model's folder (kvconfig's own ``--trust-remote-code``; the
engine child sets it from its set-up). Never from what the deployment says."""


def _remote_code(args: Any) -> str | None:
    """Apply kvconfig's rule to a deployment's ``trust_remote_code``: ``None`` when it does
    not ask for it, ``trusted`` when kvconfig's command line allows it, ``ignored`` when
    it is turned off (vLLM then builds the model with its own classes, or refuses)."""
    if not getattr(args, "trust_remote_code", False):
        return None
    if TRUST_REMOTE_CODE:
        return "trusted"
    args.trust_remote_code = False
    return "ignored"


def _engine_args(args: Any) -> Any:
    from vllm.engine.arg_utils import AsyncEngineArgs

    engine_args = AsyncEngineArgs.from_cli_args(args)
    engine_args.skip_tokenizer_init = True
    engine_args.load_format = "dummy"
    return engine_args


def _teardown(core: Any) -> None:
    from vllm.distributed import parallel_state as ps

    if core is not None:
        with contextlib.suppress(Exception):
            core.shutdown()
    with contextlib.suppress(Exception):
        ps.destroy_model_parallel()
    with contextlib.suppress(Exception):
        ps.destroy_distributed_environment()
    import torch.distributed as dist

    if dist.is_initialized():
        with contextlib.suppress(Exception):
            dist.destroy_process_group()
    _clear_caches()


def _clear_caches() -> None:
    """Per-process caches of vLLM that a previous deployment filled."""
    from vllm.v1.attention import selector

    for name in ("_cached_get_attn_backend", "_cached_get_mamba_attn_backend"):
        fn = getattr(selector, name, None)
        if fn is not None and hasattr(fn, "cache_clear"):
            fn.cache_clear()
    import vllm.utils.flashinfer as fi

    for name in ("supports_trtllm_attention", "force_use_trtllm_attention"):
        fn = getattr(fi, name, None)
        if fn is not None and hasattr(fn, "cache_clear"):
            fn.cache_clear()


def where(error: BaseException) -> str | None:
    """``vllm/path.py:line`` of the innermost vLLM frame that raised."""
    marker = f"{os.sep}vllm{os.sep}"
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        if marker in frame.filename:
            return f"vllm/{frame.filename.rsplit(marker, 1)[1]}:{frame.lineno}"
    return None


def start(argv: list[str]) -> dict[str, Any]:
    """One start-up's answer: ``{"status": "ok", "facts"}``, ``{"status": "arguments",
    "message"}``, or ``{"status": "refused", "step", "error", "message", "where", "facts"}``
    (the facts vLLM had decided when it raised, if any)."""
    from kvconfig.engine.cuda import meta_device
    from kvconfig.engine.emulate import ALIGNED

    ALIGNED.clear()
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    step = "parse"
    remote_code = None
    core = None
    runner = None
    cfg = None
    try:
        args = parse(argv)
        if isinstance(args, str):
            return {"status": "arguments", "message": args}
        remote_code = _remote_code(args)
        timings["parse"] = time.perf_counter() - t0
        step = "config"
        cfg = _engine_args(args).create_engine_config()
        timings["config"] = time.perf_counter() - t0
        step = "engine"
        from vllm.v1.engine.core import EngineCore
        from vllm.v1.executor.uniproc_executor import UniProcExecutor

        # ---- KV connectors (kvconfig.engine.connectors): not instantiated during
        # start-up; their code runs on the built engine below
        from kvconfig.engine import connectors
        from kvconfig.engine.connectors.stand_in import stand_in

        stand_in()
        # ----
        with meta_device():
            try:
                core = EngineCore(cfg, UniProcExecutor, log_stats=False)
            except BaseException:
                runner = _LAST_RUNNER[-1] if _LAST_RUNNER else None
                raise
        runner = core.model_executor.driver_worker.worker.model_runner
        timings["engine"] = time.perf_counter() - t0
        facts = {**readout.read(runner, cfg), **_config_facts(cfg)}
        facts["block_size"] = int(cfg.cache_config.block_size)
        facts["block_size_requested"] = getattr(args, "block_size", None)
        facts["aligned"] = [list(a) for a in ALIGNED if a[0] != a[1]]
        # ---- KV connectors: what vLLM's connector code computes on this engine
        facts["connectors"] = connectors.read(runner, cfg, facts["block_size_requested"])
        # ----
        facts["timings"] = timings
        return {"status": "ok", "facts": facts, "remote_code": remote_code}
    except Exception as err:
        traceback.print_exception(err, file=sys.stderr)
        if isinstance(err, MachineryError) or ours(err):
            return {
                "status": "machinery",
                "step": step,
                "error": type(err).__name__,
                "message": f"kvconfig's engine mode failed against vLLM {_installed_version()} "
                f"in step {step} ({type(err).__name__}: {err}); this is not vLLM's answer",
                "where": _innermost(err),
            }
        partial: dict[str, Any] | None = None
        if cfg is not None:
            partial = {"groups": []}
            if runner is not None:
                with contextlib.suppress(Exception):
                    partial = readout.read(runner, cfg)
            partial.update(_config_facts(cfg))
        return {
            "status": "refused",
            "step": step,
            "error": type(err).__name__,
            "message": str(err),
            "where": where(err),
            "facts": partial,
            "remote_code": remote_code,
        }
    finally:
        _teardown(core)


ENGINE = os.path.dirname(os.path.abspath(__file__)) + os.sep
"""kvconfig's engine code: an exception raised in it is kvconfig's failure."""


def _innermost(error: BaseException) -> str | None:
    frames = traceback.extract_tb(error.__traceback__)
    return f"{frames[-1].filename}:{frames[-1].lineno}" if frames else None


def ours(error: BaseException) -> bool:
    """Whether ``error`` was raised by kvconfig's engine code (the emulation, the readout,
    the connectors' readers) rather than by vLLM's: of the frames that are either, the
    innermost is kvconfig's (an import of a name a release lacks raises in importlib, called
    from kvconfig's code). Then the exception is not vLLM's answer."""
    marker = f"{os.sep}vllm{os.sep}"
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        path = os.path.abspath(frame.filename)
        if path.startswith(ENGINE):
            return True
        if marker in path:
            return False
    return False


def _config_facts(cfg: Any) -> dict[str, Any]:
    """What the engine config says, known once ``create_engine_config`` returned."""
    spec = cfg.speculative_config
    return {
        "runner_version": "v2" if cfg.use_v2_model_runner else "v1",
        "speculative_method": spec.method if spec is not None else None,
        "hooks": _hooks_mode(),
    }


def _hooks_mode() -> str:
    """The mode of the kvconfig hooks vLLM's plugin loader loaded (``none``: not loaded).

    The state is read off the module vLLM imported; importing it here would load the
    plugin where vLLM did not."""
    plugin = sys.modules.get("kvconfig.hooks")
    if plugin is None:
        return "none"
    state = plugin.status()
    return str(state.mode) if state.active else "none"


_LAST_RUNNER: list[Any] = []
"""The model runner the last start-up built (read when that start-up raises)."""


def remember_runners() -> None:
    """Keep a reference to each model runner built, so a failed start-up can be read.

    ``Worker.init_device`` builds the runner in every known release (through
    ``_make_model_runner`` in the newer ones, inline in the older): the runner it set is kept
    whether it returns or raises."""
    from vllm.v1.worker import gpu_worker

    worker_cls: Any = gpu_worker.Worker
    real = worker_cls.init_device

    def init_device(self: Any) -> Any:
        _LAST_RUNNER.clear()
        try:
            return real(self)
        finally:
            runner = self.__dict__.get("model_runner")
            if runner is not None:
                _LAST_RUNNER.append(runner)

    worker_cls.init_device = init_device
