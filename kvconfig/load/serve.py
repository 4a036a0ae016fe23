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
from kvconfig.load import yamlfile as _yaml
from kvconfig.load.checks import check_backend
from kvconfig.mirror import versions

#: Flags that store the opposite of their name into vLLM's option (argparse store_false).
NEGATING_FLAGS = frozenset(
    {"disable-prefix-caching", "enable-hybrid-kv-cache-manager", "disable-mm-embeds"}
)

#: Options whose value is a JSON object (or a YAML mapping in a config file).
JSON_OPTIONS = frozenset(
    {"speculative-config", "attention-config", "hf-overrides", "compilation-config"}
)


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

    def err(self, key: str, message: str, hint: str = "") -> InputError:
        """An InputError located at ``key``."""
        return InputError(
            message,
            source=self.source,
            line=self.lines.get(key.split(".", maxsplit=1)[0]),
            key=key,
            hint=hint,
        )


def _canonical(name: str) -> str:
    """vLLM's normalisation: underscores become dashes before the first dot."""
    head, dot, rest = name.partition(".")
    return head.replace("_", "-") + dot + rest


def _option(opts: Options, raw_key: str, value: Any, line: int | None, version: str) -> None:
    known = versions.facts(version).serve_options
    key = _canonical(str(raw_key).removeprefix("--"))
    head, _, nested = key.partition(".")
    spec = known.get(f"--{head}")
    if spec is None and head.startswith("no-") and f"--{head[3:]}" in known:
        spec, head, value = known[f"--{head[3:]}"], head[3:], False
    if head in NEGATING_FLAGS and isinstance(value, bool):
        value = not value
    if spec is None:
        dashes = "--" if str(raw_key).startswith("--") else ""
        names = [dashes + k.removeprefix("--") for k in known if k.startswith("--")]
        raise InputError(
            f"unknown vLLM {version} option {raw_key!r}",
            source=opts.source,
            line=line,
            key=str(raw_key),
            hint=did_you_mean(dashes + head, names) or "see 'vllm serve --help'",
        )
    dest = str(spec["dest"]).replace("_", "-")
    opts.lines.setdefault(dest, line)
    if nested:
        if dest not in JSON_OPTIONS:
            raise InputError(
                f"{head!r} takes no sub-keys",
                source=opts.source,
                line=line,
                key=key,
                hint=f"write '{head}: value'",
            )
        current = opts.values.setdefault(dest, {})
        if not isinstance(current, dict):
            raise opts.err(key, f"{head!r} is given both whole and by sub-keys", "use one form")
        node = current
        parts = nested.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = maybe_json(value)
        return
    if dest in opts.values and dest not in ("model",):
        first = opts.lines.get(dest)
        again = (
            f"set again after line {first}" if first is not None and first != line else "set twice"
        )
        raise InputError(again, source=opts.source, line=line, key=head, hint="keep one of them")
    opts.values[dest] = value


def maybe_json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def options_from_yaml(doc: _yaml.Document, version: str, base: Path | None = None) -> Options:
    """Options from a ``vllm serve --config`` YAML document, read exactly as
    ``vllm serve --config FILE`` reads it (one reader for both): vLLM's
    ``load_config_file`` turns the keys into arguments (``kvconfig.load.argv_config``),
    then vLLM's argument rules apply (``kvconfig.load.argv``): a dotted key merges into
    its option, a key given twice keeps the last value. Relative paths in it are relative
    to ``base`` (default: the file's folder)."""
    if not isinstance(doc.data, dict):
        what = "empty" if doc.data is None else describe(doc.data)
        hint = "write 'option: value' lines, e.g. 'model: ./qwen3-8b'"
        if isinstance(doc.data, str) and doc.data.lstrip().startswith("vllm serve"):
            hint = "to check a command, paste it after '--': kvconfig lint -- vllm serve ..."
        raise InputError(
            f"the file is {what}, not a mapping of vllm serve options",
            source=doc.source,
            line=1,
            hint=hint,
        )
    from kvconfig.load.argv import options
    from kvconfig.load.command import options_from_argv

    folder = base or Path(doc.source).resolve().parent
    name = doc.source if doc.source.split(".")[-1] in ("yaml", "yml") else "config.yaml"
    table = options(version)
    lines: dict[str, int | None] = {}
    for key in doc.data:
        head = _canonical(str(key)).partition(".")[0]
        spec = table.get(f"--{head}") or table.get(f"--no-{head}")
        if spec is not None:
            lines[str(spec[0]).replace("_", "-")] = doc.line(key)
    try:
        opts = options_from_argv(
            ["--config", name],
            version=version,
            base=folder,
            source=doc.source,
            read_config=lambda _path: doc.data,
        )
    except InputError as err:
        raise _located(err, doc) from None
    opts.lines.update(lines)
    for dest in opts.values:
        opts.lines.setdefault(dest, None)
    return opts


def _located(err: InputError, doc: _yaml.Document) -> InputError:
    """An argument error of the file, at the line of the key it names."""
    wanted = _canonical(err.key.removeprefix("--")).partition(".")[0]
    for key in doc.data:
        head = _canonical(str(key)).partition(".")[0]
        if wanted and (head == wanted or wanted.startswith(head) or head.startswith(wanted)):
            return InputError(
                err.message, source=doc.source, line=doc.line(key), key=str(key), hint=err.hint
            )
    return InputError(err.message, source=doc.source, line=err.line, key=err.key, hint=err.hint)


def json_option(opts: Options, name: str) -> dict[str, Any] | None:
    value = opts.values.get(name)
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
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
