"""``kvconfig``: plan, lint, explain and export KV-cache kernel block-size plans.

Exit codes: 0 no deployment is rejected (each is safe, or ``unknown``: a model kvconfig
cannot derive offline, KV401, or an option only known at run time, KV403: warnings); 1 some
deployment is rejected; 2 usage or input error; 3 a kvconfig bug (one line on stderr;
``KVCONFIG_TRACEBACK=1`` shows it).

Every input error is one line on stderr (docs/errors.md). A usage error, or a bad
file given to ``plan``, ``explain`` or ``export``, prints nothing on stdout. ``lint``
reports every file: a file it cannot read is an ``error`` row of the complete report
on stdout, and its line on stderr; the exit code is then 2, whatever the other files
gave.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from kvconfig.cli.outcomes import say
from kvconfig.cli.parser import COMMANDS, build_parser
from kvconfig.errors import InputError, KVConfigError
from kvconfig.report import exit_code, render_lint
from kvconfig.report.outcome import Outcome


def main(argv: Sequence[str] | None = None, stdout: TextIO | None = None) -> int:
    """Run the CLI; returns the exit code."""
    out = stdout or sys.stdout
    args_list = list(sys.argv[1:] if argv is None else argv)
    command: list[str] | None = None
    if "--" in args_list:
        cut = args_list.index("--")
        args_list, command = args_list[:cut], args_list[cut + 1 :]
    from kvconfig import secrets
    from kvconfig.load import roots

    secrets.forget()
    try:
        args = _parse(args_list)
        from kvconfig.load.repo_config import effective

        args = effective(args)
        handler: Callable[[argparse.Namespace, list[str] | None], tuple[str, int]] = _HANDLERS[
            args.command
        ]
        with roots.reading_within(roots.of_command(args)):
            text, code = handler(args, command)
        text = secrets.redact(text)
    except KVConfigError as err:
        say(str(err))
        return 2
    except Exception as err:
        if os.environ.get("KVCONFIG_TRACEBACK"):
            raise
        say(internal_error(err))
        return 2
    try:
        out.write(text)
        out.flush()
    except BrokenPipeError:
        # the reader went away (``kvconfig lint ... | head``): stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return code
    return code


INTERNAL_ERROR = "internal error (kvconfig's own failure, not your input's)"
"""How the one line of an unexpected exception in kvconfig begins (exit 2)."""


def internal_error(err: BaseException) -> str:
    """The one line an unexpected exception in kvconfig's own code prints: what failed,
    that it is kvconfig's failure, and where to report it."""
    text = " ".join(str(err).split())[:300]
    return (
        f"{INTERNAL_ERROR}: {type(err).__name__}: {text} (please report it to kvconfig with "
        "the input; KVCONFIG_TRACEBACK=1 shows the traceback)"
    )


@functools.cache
def _parser(command: str | None) -> argparse.ArgumentParser:
    """The parser of ``command`` (``build_parser``), built once per process (building it
    costs more than most commands: argparse formats and translates every option)."""
    return build_parser(command)


def _parse(words: list[str]) -> argparse.Namespace:
    """``words`` parsed; list values are the namespace's own (an ``append`` option's
    default list belongs to the shared parser, so a handler that extends it must not
    change the next command's default)."""
    command = words[0] if words and words[0] in COMMANDS else None
    args = _parser(command).parse_args(words)
    for name, value in vars(args).items():
        if isinstance(value, list):
            setattr(args, name, list(value))
    return args


def outcomes(args: argparse.Namespace, command: list[str] | None, many: bool) -> list[Outcome]:
    """One outcome per (deployment, platform), planned as ``--engine`` says.

    With ``many`` (``lint``) a deployment that cannot be read or planned becomes an
    error outcome and its line goes to stderr; otherwise the InputError propagates.
    """
    from kvconfig.cli.outcomes import finish, read_all

    s, slots = read_all(args, command, many)
    if s.engine != "offline":
        from kvconfig.cli.engine_runs import run

        slots = run(args, s, slots, many)
    return finish(slots)


def _cmd_plan(args: argparse.Namespace, command: list[str] | None) -> tuple[str, int]:
    from kvconfig.report.json import render_json
    from kvconfig.report.text import render_plan

    runs = outcomes(args, command, many=False)
    if args.format == "json":
        text = render_json(runs)
    elif args.format == "html":
        from kvconfig.report.html import render_outcomes

        text = render_outcomes(runs, command="plan")
    else:
        text = "\n".join(
            render_plan(o.plan, o.label() if o.engine else None) for o in runs if o.plan is not None
        )
    return text, 1 if any(o.verdict == "reject" for o in runs) else 0


def _cmd_lint(args: argparse.Namespace, command: list[str] | None) -> tuple[str, int]:
    if args.fleet:
        return _lint_fleet(args, command)
    runs = outcomes(args, command, many=True)
    # each bad deployment has had its line on stderr (docs/errors.md)
    return render_lint(args.format, runs), exit_code(runs)


def _lint_fleet(args: argparse.Namespace, command: list[str] | None) -> tuple[str, int]:
    from kvconfig.fleet import lint_fleet

    if args.format not in ("text", "json", "html"):
        raise InputError(
            f"--fleet reports as text, json or html, not {args.format}",
            key="--format",
            hint="kvconfig lint --fleet --format json FILE",
        )
    from kvconfig.cli.outcomes import fleet_options

    return lint_fleet(args.deployments, format=args.format, **fleet_options(args, command))


def _cmd_explain(args: argparse.Namespace, command: list[str] | None) -> tuple[str, int]:
    from kvconfig.report.explain import explain_code, explain_plan

    code = (args.deployment or "").upper()
    if code.startswith("KV") and not Path(args.deployment).exists():
        if args.format == "html":
            from kvconfig.report.html import render_words

            return render_words(f"kvconfig explain {code}", explain_code(code)), 0
        return explain_code(code), 0
    runs = outcomes(args, command, many=False)
    if args.format == "html":
        from kvconfig.report.html import render_outcomes

        return render_outcomes(runs, command="explain"), 0
    return "\n".join(explain_plan(o.plan) for o in runs if o.plan is not None), 0


def _cmd_export(args: argparse.Namespace, command: list[str] | None) -> tuple[str, int]:
    from kvconfig.report.export import export_plan, export_schemas

    if args.schema:
        # 'kvconfig export --schema DIR' and 'kvconfig export --schema -o DIR' both name the folder
        folders = [*args.deployments, *([args.output] if args.output else [])]
        if len(folders) > 1 or command:
            raise InputError(
                f"writes to one folder, got {len(folders) + (1 if command else 0)}",
                key="--schema",
                hint="kvconfig export --schema DIR",
            )
        return export_schemas(folders[0] if folders else None), 0
    runs = outcomes(args, command, many=False)
    return export_plan(runs, args.output)


def _cmd_diff(args: argparse.Namespace, command: list[str] | None) -> tuple[str, int]:
    from kvconfig.fleet.diff import diff_files

    if command:
        raise InputError("compares two files", key="diff", hint="kvconfig diff A.json B.json")
    return diff_files(args.a, args.b)


def _cmd_catalog(args: argparse.Namespace, command: list[str] | None) -> tuple[str, int]:
    from kvconfig.cli.outcomes import say
    from kvconfig.mirror import versions
    from kvconfig.report.catalog import catalog_report

    version: str | None = None
    if args.vllm_version:
        named = versions.release(args.vllm_version)
        if named.assumed:  # the nearest known release's catalog, said on stderr (KV502)
            say(f"warning: {named.message()} (KV502)")
        version = named.version
    return catalog_report(args.backend, args.platform, version, args.format), 0


_HANDLERS: dict[str, Callable[[argparse.Namespace, list[str] | None], tuple[str, int]]] = {
    "plan": _cmd_plan,
    "lint": _cmd_lint,
    "explain": _cmd_explain,
    "export": _cmd_export,
    "catalog": _cmd_catalog,
    "diff": _cmd_diff,
}


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
