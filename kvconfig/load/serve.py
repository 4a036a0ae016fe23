"""``vllm serve`` options, from a ``--config`` YAML file (or, through
``kvconfig.load.command``, a pasted command or an operator file's engine).

A ``vllm serve --config FILE`` YAML holds the command's options as keys. Every form
becomes one ``Options``: each option checked against the options vLLM's ``serve`` parser
knows (the release's ``facts.json``), normalised as vLLM's parser normalises it, with the
line it was set on. ``kvconfig.load.serve_deployment`` turns them into a ``Deployment``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from kvconfig._suggest import did_you_mean
from kvconfig.codes import FindingCode
from kvconfig.errors import InputError, describe
from kvconfig.load import jsontext
from kvconfig.load.checks import check_backend
from kvconfig.mirror import versions

if TYPE_CHECKING:
    from kvconfig.load.hub import ModelPaths


class Notice(NamedTuple):
    """Something vLLM does with the deployment that its text does not show: the CLI
    reports it as a finding of the plan (docs/findings.md, KV8xx)."""

    code: FindingCode
    message: str


@dataclass
class Options:
    """Normalised ``vllm serve`` options: name (dashes) -> value, and where each was set."""

    source: str
    base: Path
    values: dict[str, Any] = field(default_factory=dict)
    lines: dict[str, int | None] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    notices: list[Notice] = field(default_factory=list)
    """What vLLM's parsing of these options does that their text hides."""
    model_paths: ModelPaths | None = None
    """``--model-path PATTERN=DIR`` rules (and an operator file's bind mounts)."""
    download: bool | None = None
    """Fetch a Hugging Face id's ``config.json`` from the Hub when it is not cached
    (``--download``; None: ``KVCONFIG_DOWNLOAD``)."""
    model_uri: str | None = None
    """Where the platform fetches the model from (``hf://ORG/NAME`` for KServe's
    ``/mnt/models``)."""
    speculator_uri: str | None = None
    """Where the platform fetches the speculator model from (``hf://ORG/NAME`` for
    KServe's ``/mnt/speculator/model``)."""

    def err(self, key: str, message: str, hint: str = "") -> InputError:
        """An InputError located at ``key``."""
        return InputError(
            message,
            source=self.source,
            line=self.lines.get(key.split(".", maxsplit=1)[0]),
            key=key,
            hint=hint,
        )


def maybe_json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return jsontext.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def json_option(opts: Options, name: str) -> dict[str, Any] | None:
    value = opts.values.get(name)
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = jsontext.loads(value)
        except json.JSONDecodeError as err:
            raise opts.err(
                name,
                f"invalid JSON: {err.msg} at column {err.colno}",
                "pass one JSON object, in single quotes"
                if opts.source == "<command>"
                else "write it as a YAML mapping, or as one valid JSON object in quotes",
            ) from None
        except (RecursionError, ValueError) as err:
            raise opts.err(name, f"invalid JSON: {err}", "write it as a YAML mapping") from None
    if not isinstance(value, dict):
        raise opts.err(
            name,
            f"expected a mapping of keys, got {describe(value)}",
            f"write it as a YAML mapping under '{name}:', or as a JSON object",
        )
    return value


def int_option(opts: Options, name: str, low: int = 1, high: int = 1 << 20) -> int | None:
    value = opts.values.get(name)
    if value is None:
        return None
    expected = f"expected an integer from {low} to {high}"
    example = {"block-size": "e.g. 16, 64 or 128", "tensor-parallel-size": "e.g. 1, 2, 4 or 8"}
    hint = example.get(name, f"e.g. {low}")
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            raise opts.err(name, f"{expected}, got {describe(value)}", hint) from None
    if isinstance(value, bool) or not isinstance(value, int):
        raise opts.err(name, f"{expected}, got {describe(value)}", hint)
    if not low <= value <= high:
        raise opts.err(name, f"{expected}, got {value}", hint)
    return value


def check_keys(opts: Options, name: str, given: Mapping[str, Any], known: Sequence[str]) -> None:
    for key in given:
        if key not in known:
            raise opts.err(
                f"{name}.{key}",
                "unknown key",
                did_you_mean(str(key), known) or f"see vLLM's {name} fields",
            )


def backend_name(opts: Options, key: str, value: Any, version: str) -> str | None:
    """vLLM's parsing of a backend option: ``auto`` is None, other names its enum, upper-cased."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise opts.err(
            key, f"expected an attention backend name, got {describe(value)}", "e.g. FLASHINFER"
        )
    if value.strip().lower() == "auto":
        return None
    name = value.strip().upper()
    check_backend(
        name,
        version,
        source=opts.source,
        line=opts.lines.get(key.split(".", maxsplit=1)[0]),
        key=key,
    )
    return name


def cache_dtype(opts: Options, key: str, value: Any, version: str) -> str:
    """A KV-cache dtype option, one of the release's ``CacheDType`` values."""
    known = versions.facts(version).kv_cache_dtypes
    if not isinstance(value, str) or value not in known:
        raise opts.err(
            key,
            f"unknown KV-cache dtype {value!r} for vLLM {version}",
            did_you_mean(str(value), known) or "e.g. auto, fp8",
        )
    return value
