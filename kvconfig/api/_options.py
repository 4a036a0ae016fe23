"""The API's plumbing: its keywords as the command line's namespace, the pipeline the
CLI runs, and the rule that only kvconfig's errors leave the API."""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from kvconfig.errors import KVConfigError

if TYPE_CHECKING:
    from kvconfig.report.outcome import Outcome

P = ParamSpec("P")
R = TypeVar("R")

#: A file (``-``: standard input), or several.
Paths = str | Path | Sequence[str | Path]

#: ``lint`` and ``render`` formats (``plan``'s are ``text`` and ``json``).
FORMATS = ("text", "json", "github", "sarif")


def kvconfig_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Let only kvconfig's errors out: anything else becomes a ``KVConfigError`` that
    names it (chained, so its traceback is kept)."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except KVConfigError:
            raise
        except Exception as err:
            raise KVConfigError(
                f"internal error: {type(err).__name__}: {err} (a kvconfig bug; please "
                "report it with the input)"
            ) from err

    return wrapper


def namespace(
    command_name: str,
    paths: Paths | None,
    *,
    platform: str | Sequence[str] | None,
    env: Mapping[str, str] | Sequence[str] | None,
    hooks: str | None,
    vllm_version: str | None,
    trtllm_cubins: bool | None,
    model_path: Sequence[str],
    download: bool | None,
    allow_path: Sequence[str] = (),
    trust_remote_code: bool = False,
    engine: str = "offline",
    jobs: int = 1,
    engine_timeout: float = 300.0,
    vllm_python: str | None = None,
    fmt: str = "text",
    **more: Any,
) -> argparse.Namespace:
    """The command line's namespace for the API's keywords (each checked as the CLI
    checks its option)."""
    from kvconfig.errors import InputError

    if paths is None:
        files: list[str] = []
    elif isinstance(paths, (str, Path)):
        files = [str(paths)]
    else:
        files = [str(p) for p in paths]
    if isinstance(env, Mapping):
        env_items = [f"{k}={v}" for k, v in env.items()]
    else:
        env_items = list(env or [])
    if not isinstance(platform, str) and platform is not None:
        platform = ",".join(platform)
    for name, value, choices in (
        ("--engine", engine, ("offline", "vllm", "both", "auto")),
        ("--hooks", hooks, (None, "none", "enforce")),
        ("--format", fmt, FORMATS),
    ):
        if value not in choices:
            shown = ", ".join(repr(c) for c in choices if c is not None)
            raise InputError(f"invalid choice: {value!r}", key=name, hint=f"choose from {shown}")
    return argparse.Namespace(
        command=command_name,
        deployments=files,
        deployment=None,
        platform=platform,
        env=env_items,
        hooks=hooks,
        vllm_version=vllm_version,
        trtllm_cubins=trtllm_cubins,
        model_path=list(model_path),
        download=download or None,
        allow_path=list(allow_path),
        trust_remote_code=trust_remote_code,
        engine=engine,
        jobs=jobs,
        engine_timeout=engine_timeout,
        vllm_python=vllm_python,
        format=fmt,
        **more,
    )


def outcomes(args: argparse.Namespace, command: Sequence[str] | None, many: bool) -> list[Outcome]:
    """The CLI's outcomes, without its lines on stderr (each error is in its outcome);
    files the deployments name are read only under the command's allowed roots."""
    from kvconfig.cli.outcomes import read_all
    from kvconfig.load.roots import of_command, reading_within

    with reading_within(of_command(args)):
        s, slots = read_all(args, list(command) if command else None, many)
        if s.engine != "offline":
            from kvconfig.cli.engine_runs import run

            slots = run(args, s, slots, many)
    out = []
    for slot in slots:
        assert slot.outcome is not None
        out.append(slot.outcome)
    return out
