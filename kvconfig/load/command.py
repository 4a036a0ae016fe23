"""A ``vllm serve`` command line as ``Options``, read by vLLM's own argument rules.

A pasted command (``[VAR=x ...] vllm serve MODEL --opt value ...``, or any entry point
``kvconfig.load.engines.server_start`` recognises: ``python -m
vllm.entrypoints.openai.api_server``, ``python -m dynamo.vllm``, ...) and the arguments
of an operator file's engine go through ``kvconfig.load.argv.parse_serve_args``: the
last occurrence wins, dotted keys replace the whole option, ``--config FILE`` is read
relative to the folder vLLM starts in, ``--config=FILE`` is ignored as vLLM ignores it.
What vLLM does that the text hides becomes a ``Notice`` (a finding of the plan).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from kvconfig.codes import FindingCode
from kvconfig.errors import InputError, describe
from kvconfig.load import yamlfile as _yaml
from kvconfig.load.serve import Notice, Options

_ENV_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")

#: The notes of ``kvconfig.load.argv`` that become findings, by kind.
NOTE_CODES = {
    "config-equals-ignored": FindingCode.CONFIG_EQUALS_IGNORED,
    "dotted-replaces": FindingCode.DOTTED_REPLACES,
    "config-value-dropped": FindingCode.CONFIG_VALUE_DROPPED,
    "other-release": FindingCode.RELEASE_ASSUMED,
    "legacy-speculative": FindingCode.RELEASE_ASSUMED,
    "duplicate-key": FindingCode.DUPLICATE_KEY,
    "runtime-arguments": FindingCode.RUNTIME_ARGUMENTS,
}


class Command(NamedTuple):
    """A pasted command, taken apart."""

    env: dict[str, str]
    """The ``VAR=x`` words before it (and after ``env``)."""
    entry: str
    """How vLLM is started (``kvconfig.load.engines.Engine.entry``)."""
    parser: str
    """``serve`` or ``api_server`` (``kvconfig.load.argv.parse_serve_args``'s ``entry``)."""
    argv: tuple[str, ...]
    """The words vLLM's parser receives, the model included."""
    defaults: Mapping[str, Any]
    """Options the launcher sets when the words leave them unset (``dynamo.vllm``)."""


def split_command(words: Sequence[str], source: str = "<command>") -> Command:
    """The environment prefix, the entry point and vLLM's words of a pasted command."""
    tokens = list(words)
    if len(tokens) == 1 and " " in tokens[0]:
        try:
            tokens = shlex.split(tokens[0])
        except ValueError as err:
            raise InputError(
                f"cannot split the command: {err}",
                source=source,
                hint="check the quotes in the pasted command",
            ) from None
    env: dict[str, str] = {}
    while tokens and _ENV_ASSIGN.match(tokens[0]):
        name, _, value = tokens.pop(0).partition("=")
        env[name] = value
    if tokens[:1] == ["env"]:
        tokens.pop(0)
        while tokens and _ENV_ASSIGN.match(tokens[0]):
            name, _, value = tokens.pop(0).partition("=")
            env[name] = value
    from kvconfig.load.operator_engine import server_start
    from kvconfig.secrets import remember_env

    remember_env(env)
    started = server_start(tokens)
    if started is None:
        raise InputError(
            "expected a 'vllm serve ...' command",
            source=source,
            hint="paste it after '--': kvconfig lint --platform h200 -- vllm serve MODEL ...",
        )
    entry, parser, argv = started
    defaults: Mapping[str, Any] = {}
    if entry == "dynamo.vllm":
        from kvconfig.load import dynamo_args

        split = dynamo_args.split_args(argv)
        argv, defaults = split.argv, split.defaults
    return Command(env, entry, parser, tuple(argv), defaults)


def options_from_command(argv: Sequence[str], version: str, cwd: Path) -> Options:
    """Options from a pasted ``[VAR=value ...] vllm serve MODEL --opt value ...`` command;
    vLLM starts in ``cwd``."""
    cmd = split_command(argv)
    return options_from_argv(
        cmd.argv,
        version=version,
        parser=cmd.parser,
        base=cwd,
        source="<command>",
        env=cmd.env,
        defaults=cmd.defaults,
    )


def options_from_argv(
    argv: Sequence[str],
    *,
    version: str,
    parser: str = "serve",
    base: Path,
    source: str,
    line: int | None = None,
    env: Mapping[str, str] | None = None,
    defaults: Mapping[str, Any] | None = None,
    read_config: Callable[[str], Any] | None = None,
    written_for: str | None = None,
) -> Options:
    """Options from the words vLLM's parser receives (after ``vllm serve``): the value
    argparse stores for each destination, the launcher's ``defaults`` for those left
    unset; every option is located at ``line``. ``read_config`` returns a ``--config``
    file's data (default: the YAML file). ``written_for``: see ``parse_serve_args``."""
    from kvconfig.load.argv import parse_serve_args
    from kvconfig.load.argv_once import parse_once

    if any(w.startswith("--config") for w in argv):  # the file is read: here, each time
        args = parse_serve_args(
            argv, version=version, entry=parser, base=base, source=source,
            read_config=read_config, written_for=written_for,
        )  # fmt: skip
    else:
        args = parse_once(argv, version, parser, source, written_for)
    opts = Options(source, base, env=dict(env or {}))
    for key, value in args.values.items():
        opts.values[key] = value
    if args.model is not None:
        opts.values["model"] = args.model
    for key, value in (defaults or {}).items():
        opts.values.setdefault(key, value)
    opts.lines = dict.fromkeys(opts.values, line)
    for note in args.notes:
        code = NOTE_CODES.get(note.kind)
        if code is not None:
            opts.notices.append(Notice(code, note.message))
    return opts


def _canonical(name: str) -> str:
    """vLLM's normalisation: underscores become dashes before the first dot."""
    head, dot, rest = name.partition(".")
    return head.replace("_", "-") + dot + rest


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
            read_config=lambda _path: doc,
        )
    except InputError as err:
        raise _located(err, doc) from None
    opts.lines.update(lines)
    for dest in opts.values:
        opts.lines.setdefault(dest, None)
    return opts


def _located(err: InputError, doc: _yaml.Document) -> InputError:
    """An argument error of the file, at the line of the key it names; for a file named as
    a Helm chart's values are (``values.yaml``, ``gaudi-values.yaml``, ``values-gpu.yaml``),
    or beside a ``Chart.yaml``, the hint says what kvconfig reads of charts."""
    hint = err.hint
    path = Path(doc.source)
    beside_chart = path.is_file() and (path.parent / "Chart.yaml").is_file()
    if _HELM_VALUES.search(path.name) or beside_chart:
        hint = (
            "this looks like a Helm chart's values, which kvconfig reads only for the charts "
            "it knows (production-stack, the vLLM chart, llm-d-modelservice, AI on EKS's "
            "inference-charts, OPEA's vllm chart, the Semantic Router's Dynamo chart): "
            "render the chart with helm template and lint its output"
        )
    wanted = _canonical(err.key.removeprefix("--")).partition(".")[0]
    heads = {key: _canonical(str(key)).partition(".")[0] for key in doc.data}
    exact = [key for key, head in heads.items() if head == wanted]
    for key in exact or list(doc.data):
        head = heads[key]
        if wanted and (head == wanted or wanted.startswith(head) or head.startswith(wanted)):
            return type(err)(
                err.message, source=doc.source, line=doc.line(key), key=str(key), hint=hint
            )
    return type(err)(err.message, source=doc.source, line=err.line, key=err.key, hint=hint)


_HELM_VALUES = re.compile(r"(^|[-_.])values([-_.][^/]*)?\.ya?ml$", re.I)
"""Helm's ``values.yaml`` and the names charts give their variants (``gaudi-values.yaml``,
``values-gpt-oss-20b-vllm.yaml``)."""
