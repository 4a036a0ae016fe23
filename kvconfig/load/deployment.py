"""Reading a deployment: a ``vllm serve`` YAML file, a pasted command, a native file, or
one engine of an operator file.

``load`` is the one way in, for the CLI and the API alike (``load_noted`` also returns
what vLLM does that the text hides, as notices; ``load_engine`` reads an operator
file's engine, ``kvconfig.load.engines``). A YAML file whose top level has a
``kvconfig`` key is a native file, validated by ``kvconfig.load.validate``; any other
YAML file is a ``vllm serve --config`` file, and a list of words a pasted ``vllm serve``
command (``kvconfig.load.serve``, ``kvconfig.load.command``,
``kvconfig.load.serve_deployment``). All end as the same
``schemas.deployment.Deployment``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from kvconfig.codes import FindingCode
from kvconfig.load import checks, validate
from kvconfig.load import serve as _serve
from kvconfig.load import yamlfile as _yaml
from kvconfig.load.command import options_from_command, options_from_yaml
from kvconfig.load.platforms import parse_platform
from kvconfig.load.serve import Notice
from kvconfig.load.serve_deployment import to_deployment
from kvconfig.mirror import versions
from kvconfig.schemas.deployment import Deployment

if TYPE_CHECKING:
    from kvconfig.load.hub import ModelPaths
    from kvconfig.load.operator_engine import Engine


class Loaded(NamedTuple):
    """A deployment, and what vLLM does with its text that the text does not show."""

    deployment: Deployment
    notices: tuple[Notice, ...] = ()


def is_native(doc: _yaml.Document) -> bool:
    """Whether a parsed YAML file is a native kvconfig deployment file."""
    return isinstance(doc.data, dict) and "kvconfig" in doc.data


def load(
    target: str | Sequence[str],
    *,
    platform: str | None = None,
    env: Mapping[str, str] | None = None,
    vllm_version: str | None = None,
    hooks: str | None = None,
    trtllm_cubins: bool | None = None,
    cwd: Path | None = None,
    model_paths: ModelPaths | None = None,
    download: bool | None = None,
) -> Deployment:
    """The deployment of a file path or of a command (a list of words).

    The keywords are the CLI's options and override what the file says: ``platform``
    (``--platform``), ``env`` (``--env``; ``VLLM_USE_V2_MODEL_RUNNER`` there decides the
    runner), ``vllm_version``, ``hooks``, and ``trtllm_cubins=False``
    (``--no-trtllm-cubins``: FlashInfer's TRTLLM cubins cannot be fetched where the engine
    runs, which vLLM checks at start-up and which decides FlashInfer's large pages on
    SM10x); ``model_paths`` (``--model-path``) and ``download`` (``--download``) say
    where models are read from. Raises InputError for bad input and
    UnsupportedArchitecture for a model kvconfig cannot derive.
    """
    return load_noted(
        target,
        platform=platform,
        env=env,
        vllm_version=vllm_version,
        hooks=hooks,
        trtllm_cubins=trtllm_cubins,
        cwd=cwd,
        model_paths=model_paths,
        download=download,
    ).deployment


def _overrides(
    platform: str | None, hooks: str | None, trtllm_cubins: bool | None
) -> dict[str, Any]:
    overrides: dict[str, Any] = {}
    if platform is not None:
        overrides["platform"] = parse_platform(platform).name
    if hooks is not None:
        overrides["hooks"] = hooks
    if trtllm_cubins is not None:
        overrides["trtllm_cubins"] = trtllm_cubins
    return overrides


def load_noted(
    target: str | Sequence[str],
    *,
    platform: str | None = None,
    env: Mapping[str, str] | None = None,
    vllm_version: str | None = None,
    hooks: str | None = None,
    trtllm_cubins: bool | None = None,
    cwd: Path | None = None,
    model_paths: ModelPaths | None = None,
    download: bool | None = None,
    doc: _yaml.Document | None = None,
) -> Loaded:
    """``load``, with the notices; ``doc`` is the file's document when already parsed."""
    named = versions.release(vllm_version) if vllm_version else None
    version = named.version if named is not None else versions.DEFAULT
    assumed = (
        (Notice(FindingCode.RELEASE_ASSUMED, named.message()),)
        if named is not None and named.assumed
        else ()
    )
    extra_env = dict(env or {})
    overrides = _overrides(platform, hooks, trtllm_cubins)
    if isinstance(target, str):
        if doc is None:
            doc = _yaml.load(Path(target), target)
        if is_native(doc):
            native_version, notices = _native_release(doc, target, version if named else None)
            dep = _native(doc, target, native_version, extra_env, overrides)
            return Loaded(dep, (*assumed, *notices))
        opts = options_from_yaml(doc, version)
    else:
        opts = options_from_command(target, version, cwd or Path.cwd())
    opts.model_paths = model_paths
    opts.download = download
    dep = to_deployment(opts, version, extra_env, overrides)
    return Loaded(dep, (*assumed, *opts.notices))


def load_engine(
    engine: Engine,
    *,
    platform: str | None = None,
    env: Mapping[str, str] | None = None,
    vllm_version: str | None = None,
    hooks: str | None = None,
    trtllm_cubins: bool | None = None,
    model_paths: ModelPaths | None = None,
    download: bool | None = None,
    configured_version: str | None = None,
) -> Loaded:
    """The deployment of one engine of an operator file (``kvconfig.load.engines``).

    The vLLM release is ``vllm_version``, else the one the engine's image names, else
    the registry's default (one kvconfig has no data for is an error without
    ``vllm_version``). The engine's words are read by vLLM's argument rules with its
    entry point's parser, relative to its file's folder; ``env`` (``--env``) goes over
    its environment. Raises InputError (naming the engine) and UnsupportedArchitecture.
    """
    from kvconfig.load.engine_options import engine_options, engine_version, located

    version, assumed = engine_version(engine, vllm_version, configured_version)
    opts = engine_options(engine, version=version, model_paths=model_paths, download=download)
    opts.notices[:0] = assumed
    overrides = _overrides(platform, hooks, trtllm_cubins)
    dep = located(engine, lambda: to_deployment(opts, version, dict(env or {}), overrides))
    return Loaded(dep, tuple(opts.notices))


def serve_options(
    target: str | Sequence[str],
    *,
    version: str,
    cwd: Path | None = None,
    doc: _yaml.Document | None = None,
) -> _serve.Options:
    """The ``vllm serve`` options of a serve config (a path, relative to ``cwd``; ``doc``
    when it is already parsed) or of a command (its words), before they become a
    deployment (``from_options``): callers that set options of their own (the fleet's
    parallelism) set them here."""
    base = cwd or Path.cwd()
    if isinstance(target, str):
        path = Path(target) if Path(target).is_absolute() else base / target
        if doc is None:
            doc = _yaml.load(path, target)
        return options_from_yaml(doc, version, base=path.resolve().parent)
    return options_from_command(target, version, base)


def from_options(
    opts: _serve.Options,
    *,
    version: str,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Deployment:
    """The deployment of ``vllm serve`` options; ``overrides`` are deployment fields the
    caller sets (``platform``, ``hooks``, ``trtllm_cubins``, ``source``)."""
    return to_deployment(opts, version, dict(env or {}), dict(overrides or {}))


def _native_release(
    doc: _yaml.Document, source: str, asked: str | None
) -> tuple[str | None, tuple[Notice, ...]]:
    """The release a native file plans with: ``--vllm-version``, else its own
    ``vllm_version`` (a release kvconfig has no rules for is assumed, with KV502)."""
    said = doc.data.get("vllm_version") if isinstance(doc.data, dict) else None
    if asked is not None or not isinstance(said, str) or said in versions.KNOWN:
        return asked, ()
    named = versions.release(said, source=source, line=doc.line("vllm_version"), key="vllm_version")
    return named.version, (Notice(FindingCode.RELEASE_ASSUMED, named.message()),)


def _native(
    doc: _yaml.Document,
    source: str,
    vllm_version: str | None,
    env: Mapping[str, str],
    overrides: Mapping[str, Any],
) -> Deployment:
    data = {**doc.data, "source": source, **overrides}
    if vllm_version is not None:
        data["vllm_version"] = vllm_version
    if env:
        data["env"] = {**(data.get("env") or {}), **env}
        if "VLLM_USE_V2_MODEL_RUNNER" in env:
            # --env on the command line decides the runner, as it does for serve configs
            data["runner"] = checks.runner_from_env(env, source)
    return validate.deployment(data, doc)


__all__ = [
    "Loaded",
    "from_options",
    "is_native",
    "load",
    "load_engine",
    "load_noted",
    "serve_options",
]
