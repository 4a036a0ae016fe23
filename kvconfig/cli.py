"""``kvconfig``: plan, lint, explain and export KV-cache kernel block-size plans.

Exit codes: 0 every deployment is safe; 1 some deployment is rejected; 2 usage or
input error (one line on stderr, nothing on stdout).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn, TextIO

from kvconfig.errors import InputError, KVConfigError

FORMATS = ("text", "json", "github", "sarif")


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one line and exit code 2."""

    def error(self, message: str) -> NoReturn:
        raise InputError(message, source=self.prog, hint=f"see '{self.prog} --help'")


def _env_pairs(items: Sequence[str]) -> dict[str, str]:
    env = {}
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or not name:
            raise InputError(f"expected KEY=VALUE, got {item!r}", key="--env", hint="e.g. --env VLLM_USE_V2_MODEL_RUNNER=0")
        env[name] = value
    return env


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    parser = _Parser(
        prog="kvconfig",
        description="One authoritative KV-cache kernel block-size plan for vLLM deployments.",
    )
    from kvconfig import __version__

    parser.add_argument("--version", action="version", version=f"kvconfig {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def common(p: argparse.ArgumentParser, formats: Sequence[str]) -> None:
        p.add_argument(
            "--platform",
            help="GPU name (H200, B200, GB300, RTX PRO 6000, ...), smXY or X.Y; a comma list for several",
        )
        p.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                       help="environment of the vLLM process (e.g. VLLM_USE_V2_MODEL_RUNNER=0)")
        p.add_argument("--hooks", choices=("none", "enforce"),
                       help="whether the kvconfig vLLM hooks will be installed")
        p.add_argument("--vllm-version", help="vLLM release to plan for (default 0.33.0)")
        p.add_argument("--format", choices=formats, default="text")

    p_plan = sub.add_parser("plan", help="print the plan of one deployment")
    p_plan.add_argument("deployment", nargs="?", help="vllm serve YAML or native kvconfig file")
    common(p_plan, ("text", "json"))

    p_lint = sub.add_parser("lint", help="check deployments; exit 1 if any is rejected")
    p_lint.add_argument("deployments", nargs="*", help="files, or folders of YAML files")
    common(p_lint, FORMATS)

    p_explain = sub.add_parser("explain", help="explain a plan step by step, or a finding code")
    p_explain.add_argument("deployment", nargs="?", help="deployment file, or a code like KV101")
    common(p_explain, ("text",))

    p_export = sub.add_parser("export", help="write a plan (or the JSON Schemas) to files")
    p_export.add_argument("deployment", nargs="?")
    p_export.add_argument("-o", "--output", help="output file (plan) or folder (--schema)")
    p_export.add_argument("--schema", action="store_true", help="write the JSON Schemas instead")
    common(p_export, ("json",))

    p_cat = sub.add_parser("catalog", help="what each attention backend accepts, and why")
    p_cat.add_argument("--backend", help="one backend (vLLM name or class path)")
    p_cat.add_argument("--platform", help="evaluate the sizes on this platform")
    p_cat.add_argument("--vllm-version", default=None)
    p_cat.add_argument("--format", choices=("text", "json"), default="text")
    p_cat.add_argument("--from-vllm", action="store_true",
                       help="regenerate the catalog from the installed vLLM")
    p_cat.add_argument("--diff", nargs=2, metavar=("OLD", "NEW"), help="compare two versions' catalogs")
    p_cat.add_argument("-o", "--output", help="where --from-vllm writes (default: the shipped file)")
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
        handler: Callable[[argparse.Namespace, list[str] | None], tuple[str, int]] = _HANDLERS[args.command]
        text, code = handler(args, command)
    except InputError as err:
        print(f"kvconfig: {err}", file=sys.stderr)
        return 2
    except KVConfigError as err:
        print(f"kvconfig: {err}", file=sys.stderr)
        return 2
    out.write(text)
    return code


def _targets(args: argparse.Namespace, command: list[str] | None, many: bool) -> list[str | list[str]]:
    items: list[str] = list(getattr(args, "deployments", None) or [])
    single = getattr(args, "deployment", None)
    if single:
        items.append(single)
    targets: list[str | list[str]] = []
    for item in items:
        path = Path(item)
        if path.is_dir():
            found = sorted(str(p) for p in path.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())
            if not found:
                raise InputError("folder holds no .yaml or .yml files", source=item, hint="pass files")
            targets.extend(found)
        else:
            targets.append(item)
    if command:
        targets.append(command)
    if not targets:
        raise InputError("no deployment given", hint="pass a file, or '-- vllm serve ...'")
    if not many and len(targets) > 1:
        raise InputError("one deployment at a time here", hint="use 'kvconfig lint' for several")
    return targets


def _platforms(args: argparse.Namespace) -> list[object]:
    from kvconfig._platforms import parse_platforms

    if args.platform:
        return list(parse_platforms(args.platform))
    return [None]


def _outcomes(args: argparse.Namespace, command: list[str] | None, many: bool) -> list[object]:
    from kvconfig._hf import UnsupportedArchitecture
    from kvconfig._load import load_setup
    from kvconfig._report import Outcome
    from kvconfig._resolve import PlanResult, resolve_setup
    from kvconfig import _findings as F

    env = _env_pairs(args.env)
    outcomes: list[object] = []
    for target in _targets(args, command, many):
        source = target if isinstance(target, str) else "<command>"
        for platform in _platforms(args):
            try:
                setup = load_setup(
                    target, platform, env=env, vllm_version=args.vllm_version, hooks=args.hooks  # type: ignore[arg-type]
                )
            except UnsupportedArchitecture as err:
                from kvconfig._platforms import PlatformId
                from kvconfig._setup import LayerSet, Setup

                plat = platform if isinstance(platform, PlatformId) else None
                if plat is None:
                    raise InputError("no platform given", source=source, key="--platform",
                                     hint="pass --platform (e.g. --platform h200)") from None
                stub = Setup(source=source, platform=plat, layers=(LayerSet(),))
                plan = PlanResult(stub, (), (F.architecture(err.architecture, err.source, err.snippet),))
                outcomes.append(Outcome(source, plat.label(), plan))
                continue
            if setup.platform is None:
                raise InputError("no platform given", source=source, key="--platform",
                                 hint="pass --platform (e.g. --platform h200) or set 'platform' in the file")
            plan = resolve_setup(setup)
            outcomes.append(Outcome(source, setup.platform.label(), plan, line_of=_key_lines(target)))
    return outcomes


def _key_lines(target: str | list[str]) -> dict[str, int]:
    if not isinstance(target, str):
        return {}
    from kvconfig import _yaml

    try:
        doc = _yaml.load(Path(target), target)
    except InputError:
        return {}
    if not isinstance(doc.data, dict):
        return {}
    return {str(k).replace("_", "-"): doc.line(k) or 1 for k in doc.data}


def _cmd_plan(args: argparse.Namespace, command: list[str] | None) -> tuple[str, int]:
    from kvconfig._report import Outcome, render_json, render_plan

    outcomes = [o for o in _outcomes(args, command, many=False) if isinstance(o, Outcome)]
    if args.format == "json":
        text = render_json(outcomes)
    else:
        text = "\n".join(render_plan(o.plan) for o in outcomes if o.plan is not None)
    return text, 1 if any(o.verdict != "ok" for o in outcomes) else 0


def _cmd_lint(args: argparse.Namespace, command: list[str] | None) -> tuple[str, int]:
    from kvconfig._report import Outcome, render_github, render_json, render_lint, render_sarif

    outcomes = [o for o in _outcomes(args, command, many=True) if isinstance(o, Outcome)]
    render = {"text": render_lint, "json": render_json, "github": render_github, "sarif": render_sarif}
    return render[args.format](outcomes), 1 if any(o.verdict != "ok" for o in outcomes) else 0


def _cmd_explain(args: argparse.Namespace, command: list[str] | None) -> tuple[str, int]:
    from kvconfig._explain import explain_code, explain_plan
    from kvconfig._report import Outcome

    code = (args.deployment or "").upper()
    if code.startswith("KV") and not Path(args.deployment).exists():
        return explain_code(code), 0
    outcomes = [o for o in _outcomes(args, command, many=False) if isinstance(o, Outcome)]
    return "\n".join(explain_plan(o.plan) for o in outcomes if o.plan is not None), 0


def _cmd_export(args: argparse.Namespace, command: list[str] | None) -> tuple[str, int]:
    from kvconfig._export import export_plan, export_schemas

    if args.schema:
        return export_schemas(args.output), 0
    from kvconfig._report import Outcome

    outcomes = [o for o in _outcomes(args, command, many=False) if isinstance(o, Outcome)]
    return export_plan(outcomes, args.output)


def _cmd_catalog(args: argparse.Namespace, command: list[str] | None) -> tuple[str, int]:
    from kvconfig._catalog_cli import run_catalog

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
