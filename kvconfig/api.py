"""kvconfig's Python API: load a deployment, resolve its plan, both as typed schema objects.

>>> dep = load_deployment("examples/qwen3-8b-eagle3-gh200-triton-128.yaml", platform="gh200")
>>> plan = resolve(dep)
>>> plan.verdict
'reject'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from schemas.deployment import Deployment
    from schemas.plan import Plan


def load_deployment(
    target: str | Path | Sequence[str],
    *,
    platform: str | None = None,
    env: Mapping[str, str] | None = None,
    vllm_version: str | None = None,
    hooks: str | None = None,
    trtllm_cubins: bool | None = None,
    model_path: Sequence[str] = (),
    download: bool | None = None,
    allow_path: Sequence[str] = (),
) -> Deployment:
    """A deployment from a vLLM serve YAML, a native kvconfig file, or a ``vllm serve`` argv.

    The keywords are the CLI's options (``--platform``, ``--env``, ``--vllm-version``,
    ``--hooks``, ``--no-trtllm-cubins``, ``--model-path PATTERN=DIR`` as a list of those
    strings, ``--download``, ``--allow-path DIR`` as a list of folders), and the CLI reads
    deployments through the same loader. Files the deployment names are read only under
    the allowed roots (docs/security.md).
    Raises ``InputError`` for bad input, and ``UnsupportedArchitecture`` for a model
    kvconfig cannot derive (plan it with ``kvconfig plan --engine vllm``, or describe it
    in a native file).
    """
    from kvconfig.load.deployment import load
    from kvconfig.load.hub import ModelPaths
    from kvconfig.load.roots import allowed_roots, reading_within

    arg: str | Sequence[str] = str(target) if isinstance(target, Path) else target
    given = [arg] if isinstance(arg, str) else []
    folders = [*allow_path, *(str(rule).rpartition("=")[2] for rule in model_path)]
    with reading_within(allowed_roots(given, folders)):
        return load(
            arg,
            platform=platform,
            env=env,
            vllm_version=vllm_version,
            hooks=hooks,
            trtllm_cubins=trtllm_cubins,
            model_paths=ModelPaths.parse(model_path) if model_path else None,
            download=download,
        )


def resolve(deployment: Deployment, *, platform: str | None = None) -> Plan:
    """The plan of a deployment (``platform`` overrides the deployment's)."""
    from kvconfig.load.platforms import parse_platform
    from kvconfig.plan.resolve import resolve as resolve_plan
    from schemas.plan import Plan

    plat = parse_platform(platform) if platform is not None else None
    return Plan.model_validate(resolve_plan(deployment, plat).to_json())


__all__ = ["load_deployment", "resolve"]
