"""``kvconfig``: plan, lint, explain and export KV-cache kernel block-size plans.

Exit codes: 0 every deployment is safe; 1 some deployment is rejected; 2 usage or
input error; 3 a kvconfig bug (one line on stderr; ``KVCONFIG_TRACEBACK=1`` shows it).

Every input error is one line on stderr (docs/errors.md). A usage error, or a bad
file given to ``plan``, ``explain`` or ``export``, prints nothing on stdout. ``lint``
reports every file: a file it cannot read is an ``error`` row of the complete report
on stdout, and its line on stderr; the exit code is then 2, whatever the other files
gave.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from kvconfig.cli.outcomes import say
from kvconfig.cli.parser import build_parser
from kvconfig.errors import InputError, KVConfigError
from kvconfig.report.outcome import Outcome


def main(argv: Sequence[str] | None = None, stdout: TextIO | None = None) -> int:
    """Run the CLI; returns the exit code."""
    out = stdout or sys.stdout
    args_list = list(sys.argv[1:] if argv is None else argv)
    command: list[str] | None = None
    if "--" in args_list:
        cut = args_list.index("--")
        args_list, command = args_list[:cut], args_list[cut + 1 :]
    try:
        args = build_parser().parse_args(args_list)
        from kvconfig.load.repo_config import effective

        args = effective(args)
        handler: Callable[[argparse.Namespace, list[str] | None], tuple[str, int]] = _HANDLERS[
            args.command
        ]
        text, code = handler(args, command)
    except KVConfigError as err:
        say(str(err))
        return 2
    except Exception as err:
        if os.environ.get("KVCONFIG_TRACEBACK"):
            raise
        say(
            f"internal error: {type(err).__name__}: {err} (a kvconfig bug; please report it "
            "with the input, and rerun with KVCONFIG_TRACEBACK=1 for the traceback)"
        )
        return 3
    try:
        out.write(text)
        out.flush()
    except BrokenPipeError:
        # the reader went away (``kvconfig lint ... | head``): stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return code
    return code


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
    else:
        text = "\n".join(
            render_plan(o.plan, o.label() if o.engine else None) for o in runs if o.plan is not None
        )
    return text, 1 if any(o.verdict != "ok" for o in runs) else 0


def _cmd_lint(args: argparse.Namespace, command: list[str] | None) -> tuple[str, int]:
    if args.fleet:
        return _lint_fleet(args, command)
    runs = outcomes(args, command, many=True)
    module, name = _LINT_REPORTERS[args.format]
    render: Callable[[Sequence[Outcome]], str] = getattr(importlib.import_module(module), name)
    verdicts = {o.verdict for o in runs}
    if "error" in verdicts:
        # Bad input: each bad deployment has had its line on stderr. A report or a JSON
        # document with holes in it is worse than none; annotations (github, sarif) are
        # per problem, so they carry the input errors beside the findings.
        text = render(runs) if args.format in ("github", "sarif") else ""
        return text, 2
    return render(runs), 1 if "reject" in verdicts else 0


def _lint_fleet(args: argparse.Namespace, command: list[str] | None) -> tuple[str, int]:
    from kvconfig.cli.outcomes import env_pairs
    from kvconfig.fleet import lint_fleet

    if args.format not in ("text", "json"):
        raise InputError(
            f"--fleet reports as text or json, not {args.format}",
            key="--format",
            hint="kvconfig lint --fleet --format json FILE",
        )
    for option in ("model_path", "download"):
        if getattr(args, option):
            raise InputError(
                f"--{option.replace('_', '-')} is not read with --fleet yet",
                key="--fleet",
                hint="lint the fleet's engines one by one to use it",
            )
    if not args.deployments and not command:
        raise InputError("no fleet given", key="--fleet", hint="kvconfig lint --fleet FLEET.yaml")
    return lint_fleet(
        args.deployments,
        format=args.format,
        command=command,
        platform=args.platform,
        env=env_pairs(args.env),
        hooks=args.hooks,
        engine="vllm" if args.engine != "offline" else "offline",
        jobs=args.jobs,
        timeout=args.engine_timeout,
    )


#: ``lint --format``: the reporter of each format, imported when it is asked for.
_LINT_REPORTERS = {
    "text": ("kvconfig.report.text", "render_lint"),
    "json": ("kvconfig.report.json", "render_json"),
    "github": ("kvconfig.report.github", "render_github"),
    "sarif": ("kvconfig.report.sarif", "render_sarif"),
}


def _cmd_explain(args: argparse.Namespace, command: list[str] | None) -> tuple[str, int]:
    from kvconfig.report.explain import explain_code, explain_plan

    code = (args.deployment or "").upper()
    if code.startswith("KV") and not Path(args.deployment).exists():
        return explain_code(code), 0
    runs = outcomes(args, command, many=False)
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
    from kvconfig.report.catalog import catalog_report

    return catalog_report(args.backend, args.platform, args.vllm_version, args.format), 0


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
