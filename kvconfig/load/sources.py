"""What a file given to kvconfig is, read once: a ``vllm serve --config`` file or a native
kvconfig file (one YAML document), or an operator file with its vLLM engines.

A file of one YAML document whose top level is not an operator format
(``kvconfig.load.engines.is_operator_file``) is a serve config or native file, read with
their rules and caps (``kvconfig.load.yamlfile``: 1 MiB, one document).
Anything else that reads as an operator file (several documents, ``helm template``
output, up to ``MAX_MANIFEST_BYTES``) goes to the operator readers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, TypeAlias

from kvconfig.errors import InputError
from kvconfig.load import yamlfile as _yaml
from kvconfig.load.documents import (
    MAX_MANIFEST_BYTES,
    is_operator_file,
    keeping_last,
    read_stream,
)

if TYPE_CHECKING:
    from kvconfig.load.operator_engine import Engine

Source: TypeAlias = "_yaml.Document | list[Engine]"
"""A serve config or native file's document, or an operator file's engines (the operator
readers, ``kvconfig.load.engines``, are imported for an operator file only)."""

#: Top-level keys only operator files have (Kubernetes, chart values, compose, SkyPilot,
#: Ray Serve): a file that fails the serve-config rules but has one is an operator file.
_OPERATOR_KEY = re.compile(
    r"^(apiVersion|kind|services|servingEngineSpec|modelArtifacts|applications|llm_configs|"
    r"model_loading_config|prefill_config|decode_config|run|setup|resources|envs|num_nodes)"
    r"\s*:",
    re.M,
)


def read_file(path: Path, source: str, *, env: Mapping[str, str] | None = None) -> Source:
    """What the file at ``path`` (named ``source``) holds; ``env`` is the shell
    environment docker-compose would interpolate from (``--env``)."""
    raw = _yaml.read_bytes(path, source, MAX_MANIFEST_BYTES, what="file")
    if len(raw) > _yaml.MAX_BYTES and not _OPERATOR_KEY.search(
        raw[:65536].decode("utf-8", "replace")
    ):
        raise InputError(
            f"is {len(raw)} bytes; kvconfig reads at most {_yaml.MAX_BYTES} bytes",
            source=source,
            hint="a file like this is a few KiB: check that this is the right path",
        )
    text = _yaml.decode(raw, source)
    return read_text(
        text, source, path.resolve().parent, small=len(raw) <= _yaml.MAX_BYTES, env=env,
        path=path,
    )  # fmt: skip


def read_stdin(
    stream: BinaryIO, source: str = "<stdin>", *, env: Mapping[str, str] | None = None
) -> Source:
    """What standard input holds (``kvconfig lint -``): relative paths are relative to
    the working folder."""
    text = read_stream(stream, source)
    return read_text(text, source, Path.cwd(), small=len(text) <= _yaml.MAX_BYTES, env=env)


def read_text(
    text: str,
    source: str,
    folder: Path,
    *,
    small: bool = True,
    env: Mapping[str, str] | None = None,
    path: Path | None = None,
) -> Source:
    """What ``text`` holds; ``folder`` is where its relative paths start; ``path`` is the
    file it was read from (None: standard input)."""
    from kvconfig.load.script_file import script_dialect

    if small and script_dialect(text, source) is None:
        try:
            (doc,) = keeping_last(lambda last: [_yaml.parse(text, source, last_wins=last)])
        except InputError:
            if not _OPERATOR_KEY.search(text):
                raise
        else:
            if not is_operator_file(doc.data):
                return doc
            from kvconfig.load.engines import engines_of

            return engines_of([doc], source, folder, text=text, env=env)
    from kvconfig.load.engines import engines_in

    return engines_in(text, source, base=folder, env=env, path=path)


__all__ = ["Source", "read_file", "read_stdin", "read_text"]
