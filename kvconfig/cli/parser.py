"""The ``kvconfig`` command line's options: one parser, usage errors as one line."""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from kvconfig.errors import InputError

FORMATS = ("text", "json", "github", "sarif", "html")


class _Formatter(argparse.HelpFormatter):
    """argparse's help formatter, as wide as ``COLUMNS`` or the terminal (less 2, as
    argparse sizes it), found without importing ``shutil``: argparse makes a formatter for
    every option it adds, and ``shutil`` (with the compression modules it imports) costs
    a cold ``kvconfig lint`` about 3 ms."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=_columns() - 2)


def _columns() -> int:
    """The terminal's width by ``shutil.get_terminal_size``'s rules (80 when unknown)."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one line and exit code 2."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

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


def _seconds(text: str) -> float:
    """A positive, finite number of seconds (argparse type: nan, inf and 0 are refused)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(
            f"expected a positive, finite number of seconds, got {text!r}"
        )
    return value


def _jobs(text: str) -> int:
    """A positive count of child processes (argparse type)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected at least 1, got {text!r}")
    return value


def _common(p: argparse.ArgumentParser, formats: Sequence[str]) -> None:
    """The options of the commands that read deployments."""
    from kvconfig.mirror import versions

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
        help=f"vLLM release to plan for: {', '.join(versions.KNOWN)} (default {versions.DEFAULT})",
    )
    p.add_argument(
        "--no-trtllm-cubins",
        dest="trtllm_cubins",
        action="store_false",
        default=None,
        help="FlashInfer's TRTLLM cubins cannot be fetched where vLLM runs "
        "(no flashinfer-cubin, no network): no large FlashInfer pages on SM10x",
    )
    p.add_argument(
        "--model-path",
        action="append",
        default=[],
        metavar="PATTERN=DIR",
        help="read models whose path or id starts with PATTERN from DIR "
        "(e.g. /mnt/models=./models); the longest PATTERN wins",
    )
    p.add_argument(
        "--allow-path",
        action="append",
        default=[],
        metavar="DIR",
        help="also read files the deployments name under DIR (by default only under the "
        "working folder and the given files' folders: docs/security.md)",
    )
    p.add_argument(
        "--download",
        action="store_true",
        default=None,
        help="fetch a Hugging Face id's config.json from the Hub when it is not cached "
        "(default: the cache only; KVCONFIG_DOWNLOAD=1 sets it too)",
    )
    p.add_argument(
        "--engine",
        choices=("offline", "vllm", "both", "auto"),
        default="offline",
        help="offline: kvconfig's resolver (default); vllm: the installed vLLM's own "
        "start-up under an emulated GPU; both: each, every difference a finding; auto: "
        "offline, and vLLM's start-up for a model kvconfig cannot derive when vLLM is "
        "installed",
    )
    p.add_argument(
        "--jobs",
        type=_jobs,
        default=1,
        metavar="N",
        help="with --engine vllm|both: at most N vLLM child processes (about 2 GiB each)",
    )
    p.add_argument(
        "--trust-remote-code",
        action="store_true",
        help="with --engine vllm|both: let vLLM run code from the deployments' model "
        "folders (config.json auto_map), as vLLM's own --trust-remote-code; without it "
        "that code never runs (docs/security.md). Never for files you do not trust",
    )
    p.add_argument(
        "--engine-timeout",
        type=_seconds,
        default=300.0,
        metavar="SECONDS",
        help="with --engine vllm|both: the longest one deployment's start-up may take",
    )
    p.add_argument(
        "--vllm-python",
        metavar="PATH",
        help="with --engine vllm|both: run vLLM's start-up with this interpreter (e.g. "
        "the serving image's /usr/bin/python3) and the vLLM installed for it",
    )
    p.add_argument("--format", choices=formats, default="text")


def _plan(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "deployments",
        nargs="*",
        metavar="deployment",
        help="vllm serve YAML, native or operator file, or - for standard input",
    )
    _common(p, ("text", "json", "html"))


def _lint(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "deployments", nargs="*", help="files, folders of YAML files, or - for standard input"
    )
    p.add_argument(
        "--fleet",
        action="store_true",
        help="the files are one serving system (a fleet file, or its engines' files): "
        "check connectors, routers and offload tiers against every engine (docs/fleets.md)",
    )
    _common(p, FORMATS)


def _explain(p: argparse.ArgumentParser) -> None:
    p.add_argument("deployment", nargs="?", help="deployment file, or a code like KV101")
    _common(p, ("text", "html"))


def _export(p: argparse.ArgumentParser) -> None:
    p.add_argument("deployments", nargs="*", metavar="deployment")
    p.add_argument("-o", "--output", help="output file (plan) or folder (--schema)")
    p.add_argument("--schema", action="store_true", help="write the JSON Schemas instead")
    _common(p, ("json",))


def _catalog(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", help="one backend (vLLM name or class path)")
    p.add_argument("--platform", help="evaluate the sizes on this platform")
    p.add_argument("--vllm-version", default=None)
    p.add_argument("--format", choices=("text", "json"), default="text")


def _diff(p: argparse.ArgumentParser) -> None:
    p.add_argument("a", metavar="A.json", help="a plan, a list of plans, or a fleet plan")
    p.add_argument("b", metavar="B.json")


COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None]]] = {
    "plan": ("print the plan of one deployment", _plan),
    "lint": ("check deployments; exit 1 if any is rejected", _lint),
    "explain": ("explain a plan step by step, or a finding code", _explain),
    "export": ("write a plan (or the JSON Schemas) to files", _export),
    "catalog": ("what each attention backend accepts, and why", _catalog),
    "diff": ("compare two plan JSON files; exit 1 if they differ", _diff),
}
"""The sub-commands: their one-line help and the function that adds their options."""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command-line interface. With ``command`` (a name in ``COMMANDS``), only that
    sub-command's options are built: ``main`` parses a command line with the parser of
    the command it names, so a cold ``kvconfig lint`` builds one sub-parser, not six
    (a name that is no command builds them all, for the usage error and the help)."""
    parser = _Parser(
        prog="kvconfig",
        description="One authoritative KV-cache kernel block-size plan for vLLM deployments.",
    )
    from kvconfig import __version__

    parser.add_argument("--version", action="version", version=f"kvconfig {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, (text, add) in COMMANDS.items():
        if command not in COMMANDS or command == name:
            add(sub.add_parser(name, help=text))
    return parser
