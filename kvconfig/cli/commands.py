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
import os
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TextIO

from kvconfig.errors import InputError, KVConfigError

if TYPE_CHECKING:
    from kvconfig.errors import UnsupportedArchitecture
    from kvconfig.mirror.platform import PlatformId
    from kvconfig.report.render import Outcome
    from schemas.deployment import Deployment

FORMATS = ("text", "json", "github", "sarif")


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one line and exit code 2."""

    def error(self, message: str) -> NoReturn:
        message = re.sub(r" \(choose from (.*)\)$", r"; choose from \1", message)
        hint = f"see '{self.prog} --help'"
        if message.startswith("unrecognized arguments: "):
            first = message.split(": ", 1)[1].split()[0].split("=")[0]
            if first.startswith("-"):
                from kvconfig._suggest import did_you_mean

                hint = did_you_mean(first, self._every_option()) or hint
        raise InputError(message, key=self.prog.removeprefix("kvconfig").strip(), hint=hint)

    def _every_option(self) -> list[str]:
        """Option strings of this parser and of its sub-commands."""
        found = list(self._option_string_actions)
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    found.extend(sub._option_string_actions)
        return sorted(set(found))


def _env_pairs(items: Sequence[str]) -> dict[str, str]:
    from kvconfig.load.checks import check_env

    env = {}
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or not name.strip():
            raise InputError(
                f"expected KEY=VALUE, got {item!r}",
                key="--env",
                hint="e.g. --env VLLM_USE_V2_MODEL_RUNNER=0",
            )
        env[name.strip()] = value
    check_env(env, "")
    return env


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    parser = _Parser(
        prog="kvconfig",
        description="One authoritative KV-cache kernel block-size plan for vLLM deployments.",
    )
    from kvconfig import __version__
    from kvconfig.mirror import versions

    parser.add_argument("--version", action="version", version=f"kvconfig {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def common(p: argparse.ArgumentParser, formats: Sequence[str]) -> None:
        p.add_argument(
            "--platform",
            help="GPU name (H200, B200, GB300, RTX PRO 6000, ...), smXY or X.Y; "
            "a comma list for several",
        )
        p.add_argument(
            "--env",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="environment of the vLLM process (e.g. VLLM_USE_V2_MODEL_RUNNER=0)",
        )
        p.add_argument(
            "--hooks",
            choices=("none", "enforce"),
            help="whether the kvconfig vLLM hooks will be installed",
        )
        p.add_argument(
            "--vllm-version",
            help=f"vLLM release to plan for: {', '.join(versions.KNOWN)} "
            f"(default {versions.DEFAULT})",
        )
        p.add_argument(
            "--no-trtllm-cubins",
            dest="trtllm_cubins",
            action="store_false",
            default=None,
            help="FlashInfer's TRTLLM cubins cannot be fetched where vLLM runs "
            "(no flashinfer-cubin, no network): no large FlashInfer pages on SM10x",
        )
        p.add_argument("--format", choices=formats, default="text")

    p_plan = sub.add_parser("plan", help="print the plan of one deployment")
    p_plan.add_argument(
        "deployments", nargs="*", metavar="deployment", help="vllm serve YAML or native file"
    )
    common(p_plan, ("text", "json"))

    p_lint = sub.add_parser("lint", help="check deployments; exit 1 if any is rejected")
    p_lint.add_argument("deployments", nargs="*", help="files, or folders of YAML files")
    common(p_lint, FORMATS)

    p_explain = sub.add_parser("explain", help="explain a plan step by step, or a finding code")
    p_explain.add_argument("deployment", nargs="?", help="deployment file, or a code like KV101")
    common(p_explain, ("text",))

    p_export = sub.add_parser("export", help="write a plan (or the JSON Schemas) to files")
    p_export.add_argument("deployments", nargs="*", metavar="deployment")
    p_export.add_argument("-o", "--output", help="output file (plan) or folder (--schema)")
    p_export.add_argument("--schema", action="store_true", help="write the JSON Schemas instead")
    common(p_export, ("json",))

    p_cat = sub.add_parser("catalog", help="what each attention backend accepts, and why")
    p_cat.add_argument("--backend", help="one backend (vLLM name or class path)")
    p_cat.add_argument("--platform", help="evaluate the sizes on this platform")
    p_cat.add_argument("--vllm-version", default=None)
    p_cat.add_argument("--format", choices=("text", "json"), default="text")
    return parser


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
        handler: Callable[[argparse.Namespace, list[str] | None], tuple[str, int]] = _HANDLERS[
            args.command
        ]
        text, code = handler(args, command)
    except KVConfigError as err:
        _say(str(err))
        return 2
    except Exception as err:
        if os.environ.get("KVCONFIG_TRACEBACK"):
            raise
        _say(
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


def _say(text: str) -> None:
    """One line on stderr, ``kvconfig: ...``."""
    line = " ".join(text.split("\n"))
    print(f"kvconfig: {line}", file=sys.stderr)


def _targets(
    args: argparse.Namespace, command: list[str] | None, many: bool
) -> list[str | list[str]]:
    items: list[str] = list(getattr(args, "deployments", None) or [])
    single = getattr(args, "deployment", None)
    if single:
        items.append(single)
    targets: list[str | list[str]] = []
    for item in items:
        path = Path(item)
        if path.is_dir():
            found = sorted(
                str(p) for p in path.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file()
            )
            if not found:
                raise InputError(
                    "the folder holds no .yaml or .yml files",
                    source=item,
                    hint="pass the deployment files, or a folder that holds them",
                )
            targets.extend(found)
        else:
            targets.append(item)
    if command:
        targets.append(command)
    if not targets:
        raise InputError("no deployment given", hint="pass a file, or '-- vllm serve ...'")
    if not many and len(targets) > 1:
        raise InputError(
            f"{args.command} takes one deployment, got {len(targets)}",
            hint="use 'kvconfig lint' for several",
        )
    return targets


def _platforms(args: argparse.Namespace) -> list[PlatformId | None]:
    from kvconfig.load.platforms import parse_platforms

    if args.platform:
        return list(parse_platforms(args.platform))
    return [None]


def _outcomes(args: argparse.Namespace, command: list[str] | None, many: bool) -> list[Outcome]:
    """One outcome per (deployment, platform): each deployment is read once, then
    planned on every platform.

    With ``many`` (``lint``) a deployment that cannot be read or planned becomes an
    error outcome and its line goes to stderr; otherwise the InputError propagates.
    """
    from kvconfig.report.render import Outcome

    env = _env_pairs(args.env)
    platforms = _platforms(args)
    outcomes: list[Outcome] = []
    for target in _targets(args, command, many):
        source = target if isinstance(target, str) else "<command>"
        failed: list[tuple[str, InputError]] = []
        try:
            loaded = _load(args, target, env)
        except InputError as err:
            if not many:
                raise
            failed = [(p.label() if p is not None else "-", err) for p in platforms]
        else:
            for platform in platforms:
                label = platform.label() if platform is not None else "-"
                try:
                    outcomes.append(_outcome(loaded, target, source, platform))
                except InputError as err:
                    if not many:
                        raise
                    failed.append((label, err))
        if len(failed) == len(platforms) > 1 and len({str(f) for _, f in failed}) == 1:
            failed = [("all platforms", failed[0][1])]
        for label, problem in failed:
            _say(str(problem))
            outcomes.append(Outcome(source, label, error=str(problem), problem=problem))
    return outcomes


def _load(
    args: argparse.Namespace, target: str | list[str], env: dict[str, str]
) -> Deployment | UnsupportedArchitecture:
    """The deployment of a target, through the loader the API uses too; a model kvconfig
    cannot derive is returned as its error (it becomes finding KV401)."""
    from kvconfig.errors import UnsupportedArchitecture
    from kvconfig.load.deployment import load

    try:
        return load(
            target,
            env=env,
            vllm_version=args.vllm_version,
            hooks=args.hooks,
            trtllm_cubins=args.trtllm_cubins,
        )
    except UnsupportedArchitecture as err:
        return err


def _outcome(
    loaded: Deployment | UnsupportedArchitecture,
    target: str | list[str],
    source: str,
    platform: PlatformId | None,
) -> Outcome:
    """Resolve and report one deployment on one platform."""
    from kvconfig.errors import UnsupportedArchitecture
    from kvconfig.load.platforms import parse_platform
    from kvconfig.mirror import versions
    from kvconfig.plan import findings as F
    from kvconfig.plan.resolve import resolve
    from kvconfig.plan.result import PlanResult
    from kvconfig.report.render import Outcome

    if isinstance(loaded, UnsupportedArchitecture):
        if platform is None:
            raise InputError(
                "no platform given",
                source=source,
                key="--platform",
                hint="pass --platform, e.g. --platform h200",
            )
        found = F.architecture(loaded.architecture, loaded.source, loaded.snippet)
        plan = PlanResult(
            source=source,
            vllm_version=versions.DEFAULT,
            platform=platform,
            runner="v2",
            hooks="none",
            speculative_method=None,
            groups=(),
            findings=(found,),
        )
        return Outcome(source, platform.label(), plan)
    if platform is None:
        if loaded.platform is None:
            raise InputError(
                "no platform given",
                source=source,
                key="--platform",
                hint="pass --platform, e.g. --platform h200, or set 'platform' in the file",
            )
        platform = parse_platform(loaded.platform)
    plan = resolve(loaded, platform)
    return Outcome(source, platform.label(), plan, line_of=_key_lines(target))


def _key_lines(target: str | list[str]) -> dict[str, int]:
    if not isinstance(target, str):
        return {}
    from kvconfig.load import yamlfile as _yaml

    try:
        doc = _yaml.load(Path(target), target)
    except InputError:
        return {}
    if not isinstance(doc.data, dict):
        return {}
    return {str(k).replace("_", "-"): doc.line(k) or 1 for k in doc.data}


def _cmd_plan(args: argparse.Namespace, command: list[str] | None) -> tuple[str, int]:
    from kvconfig.report.render import render_json, render_plan

    outcomes = _outcomes(args, command, many=False)
    if args.format == "json":
        text = render_json(outcomes)
    else:
        text = "\n".join(render_plan(o.plan) for o in outcomes if o.plan is not None)
    return text, 1 if any(o.verdict != "ok" for o in outcomes) else 0


def _cmd_lint(args: argparse.Namespace, command: list[str] | None) -> tuple[str, int]:
    from kvconfig.report.render import render_github, render_json, render_lint, render_sarif

    outcomes = _outcomes(args, command, many=True)
    render = {
        "text": render_lint,
        "json": render_json,
        "github": render_github,
        "sarif": render_sarif,
    }
    verdicts = {o.verdict for o in outcomes}
    if "error" in verdicts:
        # Bad input: each bad deployment has had its line on stderr. A report or a JSON
        # document with holes in it is worse than none; annotations (github, sarif) are
        # per problem, so they carry the input errors beside the findings.
        text = render[args.format](outcomes) if args.format in ("github", "sarif") else ""
        return text, 2
    return render[args.format](outcomes), 1 if "reject" in verdicts else 0


def _cmd_explain(args: argparse.Namespace, command: list[str] | None) -> tuple[str, int]:
    from kvconfig.report.explain import explain_code, explain_plan

    code = (args.deployment or "").upper()
    if code.startswith("KV") and not Path(args.deployment).exists():
        return explain_code(code), 0
    outcomes = _outcomes(args, command, many=False)
    return "\n".join(explain_plan(o.plan) for o in outcomes if o.plan is not None), 0


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
    outcomes = _outcomes(args, command, many=False)
    return export_plan(outcomes, args.output)


def _cmd_catalog(args: argparse.Namespace, command: list[str] | None) -> tuple[str, int]:
    from kvconfig.report.catalog import run_catalog

    return run_catalog(args)


_HANDLERS: dict[str, Callable[[argparse.Namespace, list[str] | None], tuple[str, int]]] = {
    "plan": _cmd_plan,
    "lint": _cmd_lint,
    "explain": _cmd_explain,
    "export": _cmd_export,
    "catalog": _cmd_catalog,
}


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
