"""Reading deployments: ``vllm serve`` YAML files, pasted commands and native kvconfig files.

A YAML file whose top level has ``kvconfig: 1`` is a native file, validated by
``schemas.deployment.Deployment``; any other YAML file is a ``vllm serve --config``
file. Both end as the same ``Deployment`` document, then a ``Setup``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kvconfig import _serve, _yaml
from kvconfig._hf import UnsupportedArchitecture
from kvconfig._platforms import PlatformId
from kvconfig._setup import Setup
from kvconfig.errors import InputError

DEFAULT_VLLM_VERSION = "0.33.0"


def is_native(doc: _yaml.Document) -> bool:
    """Whether a parsed YAML file is a native kvconfig deployment file."""
    return isinstance(doc.data, dict) and "kvconfig" in doc.data


def document(
    target: str | Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    vllm_version: str | None = None,
    hooks: str | None = None,
    cwd: Path | None = None,
) -> tuple[dict[str, Any], _yaml.Document | None]:
    """The ``Deployment`` document of a file path or a command (argv list).

    Returns the document and, for files, the parsed YAML (for line numbers).
    Native files are returned as written (not yet validated).
    """
    version = vllm_version or DEFAULT_VLLM_VERSION
    extra_env = dict(env or {})
    if isinstance(target, str):
        path = Path(target)
        doc = _yaml.load(path, target)
        if is_native(doc):
            data = dict(doc.data)
            data["source"] = target
            if vllm_version is not None:
                data["vllm_version"] = vllm_version
            if hooks is not None:
                data["hooks"] = hooks
            if extra_env:
                data["env"] = {**(data.get("env") or {}), **extra_env}
            return data, doc
        opts = _serve.options_from_yaml(doc, version)
    else:
        opts = _serve.options_from_command(target, version, cwd or Path.cwd())
        doc = None
    data = _serve.to_document(opts, version, extra_env)
    if hooks is not None:
        data["hooks"] = hooks
    return data, doc


def validate_native(data: Mapping[str, Any], doc: _yaml.Document | None) -> dict[str, Any]:
    """Validate a native file with the schema; the first problem becomes one InputError line."""
    from pydantic import ValidationError

    from schemas.deployment import Deployment

    try:
        model = Deployment.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        loc = tuple(first["loc"])
        where = ".".join(str(p) for p in loc if not str(p).startswith(("function-", "constrained")))
        line = doc.line(*[p for p in loc if isinstance(p, (str, int))]) if doc else None
        msg = first["msg"]
        if first["type"] == "extra_forbidden":
            from kvconfig._suggest import did_you_mean
            from schemas.deployment import Deployment as D, LayerSet

            fields = list(LayerSet.model_fields) if "layers" in loc else [
                (f.alias or n) for n, f in D.model_fields.items()
            ]
            hint = did_you_mean(str(loc[-1]), fields) or "remove it"
            msg = "unknown key"
        else:
            hint = "see docs/native-format.md"
        raise InputError(
            msg.rstrip("."), source=str(data.get("source", "")), line=line, key=where, hint=hint
        ) from None
    return model.model_dump(mode="json", by_alias=True)


def load_setup(
    target: str | Sequence[str],
    platform: PlatformId | None,
    *,
    env: Mapping[str, str] | None = None,
    vllm_version: str | None = None,
    hooks: str | None = None,
    cwd: Path | None = None,
) -> Setup:
    """A deployment ready to resolve; raises InputError or UnsupportedArchitecture."""
    data, doc = document(target, env=env, vllm_version=vllm_version, hooks=hooks, cwd=cwd)
    if doc is not None and is_native(doc):
        data = validate_native(data, doc)
    return Setup.from_dict(data, platform)


__all__ = ["UnsupportedArchitecture", "document", "is_native", "load_setup", "validate_native"]
