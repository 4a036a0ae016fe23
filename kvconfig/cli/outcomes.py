"""From the command line's arguments to outcomes: each deployment read once, through the
loader the API uses, then planned on every platform asked for."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kvconfig.errors import InputError
from kvconfig.report.outcome import Outcome

if TYPE_CHECKING:
    from kvconfig.errors import UnsupportedArchitecture
    from kvconfig.mirror.platform import PlatformId
    from schemas.deployment import Deployment


def env_pairs(items: Sequence[str]) -> dict[str, str]:
    """``--env KEY=VALUE`` options as the vLLM environment they describe."""
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


def outcomes(args: argparse.Namespace, command: list[str] | None, many: bool) -> list[Outcome]:
    """One outcome per (deployment, platform): each deployment is read once, then
    planned on every platform.

    With ``many`` (``lint``) a deployment that cannot be read or planned becomes an
    error outcome and its line goes to stderr; otherwise the InputError propagates.
    """
    env = env_pairs(args.env)
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
            say(str(problem))
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


def say(text: str) -> None:
    """One line on stderr, ``kvconfig: ...``."""
    line = " ".join(text.split("\n"))
    print(f"kvconfig: {line}", file=sys.stderr)
