"""Safe, bounded YAML reading that remembers where each key was written.

Only YAML's safe subset is constructed, and only its plain types: strings,
numbers, booleans, null, lists and mappings (a timestamp stays the text it was
written as, which is what ``vllm serve --config`` passes on). Explicit tags
(``!!python/...``, ``!!binary``, ``!!set``, ``!custom``) are refused. Only
regular files are read, and at most ``MAX_BYTES`` of them, so a FIFO or
``/dev/zero`` cannot hang the reader. A document whose aliases would expand to
more than ``MAX_NODES`` nodes (a "billion laughs" file) or that nests deeper
than ``MAX_DEPTH`` is refused. A key given twice is an error (kubectl's and compose's
reading), or keeps its last value where the runtime's reader does (``parse``). Merge
keys (``<<: *base``) are YAML 1.1's, which every parser behind kvconfig's inputs applies
(PyYAML's ``safe_load`` for vLLM's ``--config``, SkyPilot and Ray Serve; go-yaml for
Kubernetes, Helm and compose): a mapping's own keys win over merged ones, an earlier
mapping of a merged list over a later one, a later merge key over an earlier one.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from kvconfig.errors import DuplicateKey, InputError
from kvconfig.load.filetext import MAX_BYTES, decode, read_bytes, read_text

MAX_NODES = 100_000
"""Most YAML nodes a document may expand to, aliases included."""

MAX_DEPTH = 64
"""Deepest nesting of lists and mappings a document may have."""

_PLAIN_TAGS = frozenset(
    "tag:yaml.org,2002:" + t for t in ("null", "bool", "int", "float", "str", "map", "seq")
)
_TIMESTAMP = "tag:yaml.org,2002:timestamp"

Path_ = tuple[str | int, ...]


class Document(NamedTuple):
    """A parsed file: its data and the line of every key path."""

    source: str
    data: Any
    lines: Mapping[Path_, int]
    duplicates: tuple[tuple[str, int, int], ...] = ()
    """Keys given twice in a mapping, read with the last value (``parse``'s
    ``last_wins``): (the key's path, written with dots; its first line; its last line)."""

    def line(self, *path: str | int) -> int | None:
        """1-based line where ``path`` was written, or its nearest parent's."""
        p: Path_ = tuple(path)
        while p:
            if p in self.lines:
                return self.lines[p]
            p = p[:-1]
        return None


_LAST_WINS: contextvars.ContextVar[list[tuple[str, int, int]] | None] = contextvars.ContextVar(
    "last_wins", default=None
)
"""While a ``last_wins`` parse runs: the keys it found given twice."""


@contextlib.contextmanager
def _keys_twice(last_wins: bool) -> Iterator[list[tuple[str, int, int]]]:
    """While a document is built: a key given twice in a mapping is ``DuplicateKey``, or
    with ``last_wins`` keeps its last value and is noted in the list this yields."""
    found: list[tuple[str, int, int]] = []
    token = _LAST_WINS.set(found if last_wins else None)
    try:
        yield found
    finally:
        _LAST_WINS.reset(token)


def parse(text: str, source: str, *, last_wins: bool = False) -> Document:
    """Parse YAML text safely into plain data with a line map. A key given twice in a
    mapping is ``DuplicateKey`` (kubectl's and compose's reading), or with ``last_wins``
    the last value (PyYAML's, so vLLM's ``--config``; Helm's values)."""
    import yaml

    loader_cls = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        loader = loader_cls(text)
    except yaml.YAMLError as err:
        raise _syntax_error(err, text, source) from None
    try:
        node = loader.get_single_node()
        if node is None:
            return Document(source, None, {})
        lines: dict[Path_, int] = {}
        with _keys_twice(last_wins) as twice:
            data = _build(node, (), lines, [MAX_NODES], source, 0)
        return Document(source, data, lines, tuple(twice))
    except yaml.YAMLError as err:
        raise _syntax_error(err, text, source) from None
    finally:
        loader.dispose()


def _syntax_error(err: Any, text: str, source: str) -> InputError:
    """One line for a PyYAML error (its own text spans several lines)."""
    import yaml

    hint = "fix the YAML syntax"
    if isinstance(err, yaml.MarkedYAMLError):
        mark = err.problem_mark or err.context_mark
        problem = " ".join((err.problem or err.context or "not valid YAML").split())
        rows = text.splitlines()
        row = rows[mark.line] if mark is not None and mark.line < len(rows) else ""
        if problem == "but found another document":
            problem, hint = "more than one YAML document ('---')", "keep one document per file"
        elif "\t" in row[: len(row) - len(row.lstrip())]:
            hint = "indent with spaces: YAML does not allow tabs there"
        elif problem.startswith("mapping values are not allowed"):
            hint = "check this line's indentation, and quote values that hold ': '"
        elif (
            err.problem
            and err.context_mark is not None
            and str(err.context).startswith(
                ("while parsing a flow sequence", "while parsing a flow mapping")
            )
        ):
            opened = "[" if "sequence" in str(err.context) else "{"
            hint = f"check the '{opened}' opened on line {err.context_mark.line + 1}"
        elif str(err.context).startswith("while parsing a flow node"):
            hint = "a value is missing, or a '[' or '{' is never closed"
        return InputError(
            f"invalid YAML: {problem}",
            source=source,
            line=mark.line + 1 if mark is not None else None,
            hint=hint,
        )
    if isinstance(err, yaml.reader.ReaderError):
        at = text[: err.position].count("\n") + 1
        char = (
            err.character if isinstance(err.character, int) else ord(str(err.character)[:1] or " ")
        )
        return InputError(
            f"invalid YAML: control character U+{char:04X} is not allowed",
            source=source,
            line=at,
            hint="remove control characters from the file",
        )
    first = str(err).splitlines()[0] if str(err) else type(err).__name__
    return InputError(f"invalid YAML: {first}", source=source, hint=hint)


def _tag(node: Any) -> str:
    """``!!binary`` for YAML's own tags, the tag as written otherwise."""
    tag = str(node.tag)
    return tag.replace("tag:yaml.org,2002:", "!!")


_STR = "tag:yaml.org,2002:str"


def _build(  # noqa: PLR0917 (a recursive walk carrying its state)
    node: Any,
    path: Path_,
    lines: dict[Path_, int],
    budget: list[int],
    source: str,
    depth: int,
) -> Any:
    import yaml

    line = node.start_mark.line + 1
    budget[0] -= 1
    if budget[0] < 0:
        raise InputError(
            f"the document expands to more than {MAX_NODES} values",
            source=source,
            line=lines.get(path[:1], line),
            hint="write the values out; aliases that multiply like this are refused",
        )
    if depth > MAX_DEPTH:
        raise InputError(
            f"lists and mappings nest more than {MAX_DEPTH} levels deep",
            source=source,
            line=line,
            hint="a deployment file is a few levels deep: check the brackets and indentation",
        )
    if path:
        lines.setdefault(path, line)
    if node.tag == _TIMESTAMP:
        return str(node.value)
    if node.tag not in _PLAIN_TAGS:
        raise InputError(
            f"unsupported YAML tag {_tag(node)}",
            source=source,
            line=line,
            hint="write plain strings, numbers, booleans, lists and mappings, without tags",
        )
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        merges = []
        for key_node, value_node in node.value:
            key_line = key_node.start_mark.line + 1
            if key_node.tag == "tag:yaml.org,2002:merge":
                merges.append((key_line, value_node))
                continue
            if not isinstance(key_node, yaml.ScalarNode):
                raise InputError(
                    "a key is a list or mapping",
                    source=source,
                    line=key_line,
                    hint="keys are plain names: write 'name: value'",
                )
            key = _build(key_node, (), {}, budget, source, depth + 1)
            if not isinstance(key, (str, int)) or isinstance(key, bool):
                key = str(key)
            sub = (*path, key)
            if key in out:
                twice = _LAST_WINS.get()
                if twice is None:
                    raise DuplicateKey(
                        f"duplicate key {key!r}, first set on line {lines[sub]}",
                        source=source,
                        line=key_line,
                        hint="keep one of them",
                    )
                twice.append((".".join(map(str, sub)), lines[sub], key_line))
                for old in [p for p in lines if p[: len(sub)] == sub]:
                    del lines[old]  # the last one wins: the first one's lines go with it
            lines[sub] = key_line
            out[key] = _build(value_node, sub, lines, budget, source, depth + 1)
        for key_line, value_node in reversed(merges):  # a later merge key wins
            _merge_into(out, value_node, key_line, path, lines, budget, source, depth)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [
            _build(v, (*path, i), lines, budget, source, depth + 1)
            for i, v in enumerate(node.value)
        ]
    return _scalar(node, source)


def _scalar(node: Any, source: str) -> Any:
    if node.tag == _STR:  # most values: SafeConstructor.construct_yaml_str gives the text
        return node.value
    import yaml

    constructor = yaml.constructor.SafeConstructor()
    try:
        return constructor.construct_object(node, deep=True)
    except (yaml.YAMLError, ValueError, OverflowError):
        raise InputError(
            f"cannot read the value {node.value!r} as {_tag(node)}",
            source=source,
            line=node.start_mark.line + 1,
            hint="remove the tag, or fix the value",
        ) from None


def load(path: Path, source: str, *, last_wins: bool = False) -> Document:
    """Read and parse one YAML file (``last_wins``: see ``parse``)."""
    return parse(read_text(path, source), source, last_wins=last_wins)


def _merge_into(  # noqa: PLR0917 (part of the recursive walk)
    out: dict[Any, Any],
    value_node: Any,
    key_line: int,
    path: Path_,
    lines: dict[Path_, int],
    budget: list[int],
    source: str,
    depth: int,
) -> None:
    """YAML merge keys (``<<: *base``, ``<<: [*a, *b]``): the keys of the merged mappings
    that the mapping does not set itself; of a list, earlier mappings win."""
    import yaml

    items = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
    for item in items:
        if not isinstance(item, yaml.MappingNode):
            raise InputError(
                "a merge key '<<' needs a mapping or a list of mappings",
                source=source,
                line=key_line,
                hint="write '<<: *anchor', with the anchor on a mapping",
            )
        item_lines: dict[Path_, int] = {}
        merged = _build(item, path, item_lines, budget, source, depth + 1)
        for key, value in merged.items():
            if key in out:
                continue
            out[key] = value
            for sub, line in item_lines.items():
                if sub[: len(path) + 1] == (*path, key):
                    lines.setdefault(sub, line)


def top_scalars(node: Any) -> dict[str, str]:
    """The plain top-level ``key: value`` pairs of a mapping node, unbuilt: a quick look
    at a document (its ``kind``, say) before deciding to read it."""
    import yaml

    out: dict[str, str] = {}
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                value = value_node.value if isinstance(value_node, yaml.ScalarNode) else ""
                out[str(key_node.value)] = str(value)
    return out


def parse_all(
    text: str,
    source: str,
    *,
    select: Callable[[Mapping[str, str]], bool] | None = None,
    last_wins: bool = False,
) -> list[Document]:
    """Every document of a YAML stream (``---`` between documents), each with its lines.

    Lines count from the start of the stream; a document's first line is ``lines[()]``.
    Empty documents are left out. Each document has its own ``MAX_NODES`` budget.
    ``select`` sees the plain top-level pairs of each mapping document
    (``top_scalars``) and may skip it unbuilt; skipped documents are not returned.
    ``last_wins``: see ``parse``.
    """
    import yaml

    loader_cls = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        loader = loader_cls(text)
    except yaml.YAMLError as err:
        raise _syntax_error(err, text, source) from None
    docs: list[Document] = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None or (node.tag == "tag:yaml.org,2002:null" and not node.value):
                continue
            if select is not None and not select(top_scalars(node)):
                continue
            lines: dict[Path_, int] = {(): node.start_mark.line + 1}
            with _keys_twice(last_wins) as twice:
                data = _build(node, (), lines, [MAX_NODES], source, 0)
            docs.append(Document(source, data, lines, tuple(twice)))
    except yaml.YAMLError as err:
        raise _syntax_error(err, text, source) from None
    finally:
        loader.dispose()
    return docs


__all__ = [
    "MAX_BYTES",
    "Document",
    "Path_",
    "decode",
    "load",
    "parse",
    "parse_all",
    "read_bytes",
    "read_text",
    "top_scalars",
]  # the file readers (kvconfig.load.filetext) are read from here too
