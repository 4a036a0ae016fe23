"""What the command line names: files, folders (their YAML files and launch scripts),
``-`` (standard input) and one pasted command, each read once (``kvconfig.load.sources``)
into the deployments it holds: a serve config or native file is one, an operator file
one per vLLM engine."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from kvconfig.errors import InputError, NoEngine

if TYPE_CHECKING:
    from kvconfig.load.operator_engine import Engine
    from kvconfig.load.yamlfile import Document

STDIN = "-"


class Item(NamedTuple):
    """One deployment the command line names."""

    source: str
    """The file as named, ``<command>`` or ``<stdin>``."""
    target: str | list[str]
    """The path, or the command's words."""
    doc: Document | None = None
    """A serve config's or native file's document."""
    engine: Engine | None = None
    """An operator file's engine."""


MAX_FOLDER_ENTRIES = 100_000
"""Most files and folders kvconfig looks at below a folder named on the command line."""


SUFFIXES = (".yaml", ".yml", ".sh", ".bash")
"""The files a folder walk reads: YAML files and launch scripts."""


class Walked(str):
    """A file a folder walk found (``folder``: the folder named on the command line), not
    named itself: one that holds no vLLM engine is passed over, not bad input."""

    folder: str

    def __new__(cls, path: str, folder: str) -> Walked:
        self = super().__new__(cls, path)
        self.folder = folder
        return self

    def __reduce__(self) -> tuple[type[Walked], tuple[str, str]]:
        return (Walked, (str(self), self.folder))  # sent by a reading worker (prefetch)


def passed_over(passed: Sequence[Walked]) -> str:
    """The note line naming the files folder walks found that hold no vLLM engine."""
    more = f" and {len(passed) - 3} more" if len(passed) > 3 else ""
    return (
        f"note: {len(passed)} file(s) in the folders hold no vLLM engine, passed over: "
        f"{', '.join(passed[:3])}{more}"
    )


def empty_folders(passed: Sequence[Walked]) -> list[NoEngine]:
    """An error for each folder whose files hold no vLLM engine at all."""
    return [
        NoEngine(
            "no file in the folder holds a vLLM engine",
            source=folder,
            hint="pass the folder of the deployment files, or name a file to see why",
        )
        for folder in dict.fromkeys(p.folder for p in passed)
    ]


def deployment_files(folder: Path, source: str) -> list[str]:
    """The regular files with a ``SUFFIXES`` name below ``folder`` (links to folders are
    not followed, ``.git`` is skipped, unreadable folders are passed over), sorted; refuses
    a folder with more than ``MAX_FOLDER_ENTRIES`` entries below it."""
    import os

    found: list[str] = []
    seen = 0
    for root, dirs, files in os.walk(folder, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d != ".git")
        seen += len(dirs) + len(files)
        if seen > MAX_FOLDER_ENTRIES:
            raise InputError(
                f"the folder holds more than {MAX_FOLDER_ENTRIES} files and folders",
                source=source,
                hint="pass the folder that holds the deployment files, or the files",
            )
        for name in files:
            full = os.path.join(root, name)
            if name.endswith(SUFFIXES) and os.path.isfile(full):
                found.append(full)
    return sorted(found)


def named(args: argparse.Namespace, command: list[str] | None, many: bool) -> list[str | list[str]]:
    """The files (folders expanded), ``-`` and the command, in the order given."""
    items: list[str] = list(getattr(args, "deployments", None) or [])
    single = getattr(args, "deployment", None)
    if single:
        items.append(single)
    targets: list[str | list[str]] = []
    for item in items:
        path = Path(item)
        if item != STDIN and path.is_dir():
            found = deployment_files(path, item)
            if not found:
                raise InputError(
                    "the folder holds no .yaml, .yml or .sh files",
                    source=item,
                    hint="pass the deployment files, or a folder that holds them",
                )
            targets.extend(Walked(f, item) for f in found)
        else:
            targets.append(item)
    if targets.count(STDIN) > 1:
        raise InputError(
            "standard input ('-') is named twice", hint="pass '-' once: it is read once"
        )
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


def source_of(target: str | list[str]) -> str:
    """How reports name a target before it is read."""
    if isinstance(target, list):
        return "<command>"
    return "<stdin>" if target == STDIN else target


def read(target: str | list[str], env: Mapping[str, str] | None = None) -> list[Item]:
    """The deployments of one target (InputError when it cannot be read); ``env`` (the
    ``--env`` options) is the shell environment docker-compose interpolates from."""
    if isinstance(target, list):
        return [Item("<command>", target)]
    from kvconfig.load import sources
    from kvconfig.load.argv_table import names_vllm_options

    if target == STDIN:
        found = sources.read_stdin(sys.stdin.buffer, env=env)
        source = "<stdin>"
    else:
        found = sources.read_file(Path(target), target, env=env)
        source = target
    if isinstance(found, list):
        return [Item(e.source, target, engine=e) for e in found]
    if isinstance(target, Walked) and not names_vllm_options(found.data):
        raise NoEngine(
            "not a deployment file: neither an operator file nor a vllm serve config "
            "(none of its top-level keys is a vLLM option) nor a native kvconfig file",
            source=source,
            line=1,
            hint="a folder's other YAML files are passed over",
        )
    return [Item(source, target, doc=found)]


def no_platform(item: Item) -> InputError:
    """The error of a deployment that names no platform."""
    where = "set 'platform' in the file" if item.doc is not None else "label the pod's GPU"
    named = item.engine.gpu if item.engine is not None else ()
    message = "no platform given"
    if named:  # the file names its GPU, but by a name kvconfig has no platform for
        message += f": kvconfig does not know the GPU {', '.join(map(repr, named))}"
        where = "label the pod with a GPU kvconfig knows"
    return InputError(
        message,
        source=item.source,
        key="--platform",
        hint=f"pass --platform, e.g. --platform h200, or {where}",
    )
