"""Safe, bounded YAML reading that remembers where each key was written.

Only YAML's safe subset is constructed (no Python objects). Files over
``MAX_BYTES`` are refused before parsing, and a document whose aliases would
expand to more than ``MAX_NODES`` nodes is refused (a "billion laughs" file).
Duplicate keys are an error rather than a silent override.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kvconfig.errors import InputError

MAX_BYTES = 1024 * 1024
"""Largest configuration file kvconfig reads (1 MiB)."""

MAX_NODES = 100_000
"""Most YAML nodes a document may expand to, aliases included."""

Path_ = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class Document:
    """A parsed file: its data and the line of every key path."""

    source: str
    data: Any
    lines: Mapping[Path_, int]

    def line(self, *path: str | int) -> int | None:
        """1-based line where ``path`` was written, or its nearest parent's."""
        p: Path_ = tuple(path)
        while p:
            if p in self.lines:
                return self.lines[p]
            p = p[:-1]
        return None


def read_text(path: Path, source: str) -> str:
    """The file's text: refuses directories, unreadable, oversized and non-UTF-8 files."""
    if path.is_dir():
        raise InputError("is a directory", source=source, hint="pass a file, or a folder to lint with --recursive")
    try:
        size = path.stat().st_size
    except FileNotFoundError as err:
        raise InputError("no such file", source=source, hint="check the path") from err
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror}", source=source, hint="check the path") from err
    if size > MAX_BYTES:
        raise InputError(
            f"file is {size} bytes; kvconfig reads at most {MAX_BYTES}",
            source=source,
            hint="a serve config or deployment file is a few KiB",
        )
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror}", source=source, hint="check permissions") from err
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise InputError(
            f"not UTF-8 (byte {err.start})", source=source, line=line, hint="save the file as UTF-8"
        ) from err


def parse(text: str, source: str) -> Document:
    """Parse YAML text safely into plain data with a line map."""
    import yaml

    loader_cls = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    loader = loader_cls(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return Document(source, None, {})
        lines: dict[Path_, int] = {}
        data = _build(node, (), lines, [MAX_NODES], source, loader)
        return Document(source, data, lines)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        problem = (err.problem or err.context or "invalid YAML").strip()
        raise InputError(
            f"invalid YAML: {problem}",
            source=source,
            line=mark.line + 1 if mark is not None else None,
            hint="fix the YAML syntax",
        ) from err
    except yaml.YAMLError as err:
        raise InputError(f"invalid YAML: {err}", source=source, hint="fix the YAML syntax") from err
    finally:
        loader.dispose()


def _build(
    node: Any, path: Path_, lines: dict[Path_, int], budget: list[int], source: str, loader: Any
) -> Any:
    import yaml

    budget[0] -= 1
    if budget[0] < 0:
        raise InputError(
            f"document expands to more than {MAX_NODES} nodes",
            source=source,
            line=node.start_mark.line + 1,
            hint="YAML aliases (&/*) that nest this deep are refused",
        )
    if path:
        lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise InputError(
                    "YAML merge keys (<<) are not supported",
                    source=source,
                    line=key_node.start_mark.line + 1,
                    hint="write the keys out",
                )
            if not isinstance(key_node, yaml.ScalarNode):
                raise InputError(
                    "keys must be plain names",
                    source=source,
                    line=key_node.start_mark.line + 1,
                    hint="use 'name: value'",
                )
            key = _scalar(key_node, source, loader)
            if not isinstance(key, (str, int)) or isinstance(key, bool):
                key = str(key)
            if key in out:
                raise InputError(
                    f"duplicate key {key!r}",
                    source=source,
                    line=key_node.start_mark.line + 1,
                    hint="keep one",
                )
            sub = (*path, key)
            lines[sub] = key_node.start_mark.line + 1
            out[key] = _build(value_node, sub, lines, budget, source, loader)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_build(v, (*path, i), lines, budget, source, loader) for i, v in enumerate(node.value)]
    return _scalar(node, source, loader)


def _scalar(node: Any, source: str, loader: Any) -> Any:
    import yaml

    try:
        return loader.construct_object(node, deep=True)
    except yaml.constructor.ConstructorError as err:
        raise InputError(
            f"unsupported YAML value: {err.problem}",
            source=source,
            line=node.start_mark.line + 1,
            hint="use plain strings, numbers, booleans, lists and mappings",
        ) from err


def load(path: Path, source: str) -> Document:
    """Read and parse one YAML file."""
    return parse(read_text(path, source), source)
