"""The repository configuration: where it is, what it says, and the settings it gives.

kvconfig looks in the working folder, then in each folder above it up to the
repository's root (the first folder holding ``.git``; outside a repository only the
working folder), and takes the nearest ``.kvconfig.toml``, or else ``pyproject.toml``
with a ``[tool.kvconfig]`` table. Its keys are ``schemas.repo_config.RepoConfig``.
``effective`` is the one function that gives the settings a command runs with (the
command line wins); other parts of kvconfig read the configuration through it.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvconfig.errors import InputError

if TYPE_CHECKING:
    from kvconfig.schemas.repo_config import RepoConfig

MAX_CONFIG_BYTES = 256 * 1024
"""Largest configuration file kvconfig reads."""


def find(start: Path) -> Path | None:
    """The configuration file that applies in ``start`` (None: there is none)."""
    folder = start.resolve()
    while True:
        own = folder / ".kvconfig.toml"
        if own.is_file():
            return own
        project = folder / "pyproject.toml"
        if project.is_file() and _has_table(project):
            return project
        if (folder / ".git").exists() or folder.parent == folder:
            return None
        if not any((p / ".git").exists() for p in folder.parents):
            return None  # outside a repository: the working folder only
        folder = folder.parent


_NAMES_KVCONFIG = re.compile(
    r"""^[ \t]*\[*[ \t]*tool[ \t]*\.[ \t]*["']?kvconfig["']?[ \t]*[\].=]""", re.M
)
"""A line that may give ``tool.kvconfig``: a table header (``[tool.kvconfig]``,
``[tool.kvconfig.env]``) or a dotted key (``tool.kvconfig.platforms = ...``)."""
_TOOL_TABLE = re.compile(r"^[ \t]*\[[ \t]*tool[ \t]*\]", re.M)
"""A ``[tool]`` table, whose keys may include ``kvconfig``."""


def _has_table(path: Path) -> bool:
    """Whether a ``pyproject.toml`` gives ``tool.kvconfig``, in any of TOML's spellings. A
    file that names it but is not valid TOML counts, so that ``load`` reports the error."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if _NAMES_KVCONFIG.search(text) is None and _TOOL_TABLE.search(text) is None:
        return False  # the common case: no TOML parser imported
    tomllib = _toml()
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError):
        return True
    tool = data.get("tool")
    return isinstance(tool, dict) and "kvconfig" in tool


def _toml() -> Any:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    return tomllib


def load(path: Path) -> RepoConfig:
    """The configuration in ``path``; InputError (file, key) when it is not valid
    (pydantic and the TOML parser are imported only here: a repository without a
    configuration never loads them)."""
    tomllib = _toml()
    from pydantic import ValidationError

    from kvconfig.schemas.repo_config import RepoConfig

    source = str(path)
    raw = path.read_bytes()
    if len(raw) > MAX_CONFIG_BYTES:
        raise InputError(
            f"is {len(raw)} bytes; kvconfig reads at most {MAX_CONFIG_BYTES}",
            source=source,
            hint="keep the configuration short",
        )
    try:
        data: Any = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise InputError(
            f"invalid TOML: {err}", source=source, hint="check the file with a TOML linter"
        ) from None
    except RecursionError:  # tomllib reads nested arrays and tables recursively
        raise InputError(
            "nested too deeply to read",
            source=source,
            hint="the configuration's values are short lists of strings and a table of strings",
        ) from None
    prefix = ""
    if path.name == "pyproject.toml":
        tool = data.get("tool", {})
        data = tool.get("kvconfig", {}) if isinstance(tool, dict) else None
        prefix = "tool.kvconfig."
        if not isinstance(data, dict):
            raise InputError(
                "tool.kvconfig is not a table",
                source=source,
                key="tool.kvconfig" if isinstance(tool, dict) else "tool",
                hint="write it as a [tool.kvconfig] table (docs/inputs.md)",
            )
    try:
        return RepoConfig.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        key = prefix + ".".join(str(p) for p in first["loc"])
        raise InputError(
            first["msg"],
            source=source,
            key=key,
            hint="keys: platforms, model-paths, env, vllm-version (docs/inputs.md)",
        ) from None


def effective(args: argparse.Namespace, cwd: Path | None = None) -> argparse.Namespace:
    """``args`` with the repository configuration's defaults filled in (the command
    line wins): ``--platform``, ``--model-path``, ``--env``; and ``configured_version``, the
    release an engine plans for when ``--vllm-version`` names none, ahead of its image tag."""
    path = find(cwd or Path.cwd())
    if path is None:
        return args
    config = load(path)
    if config.platforms and getattr(args, "platform", "absent") is None:
        args.platform = ",".join(config.platforms)
    if config.vllm_version:
        # below --vllm-version, above an image tag or a pinned install (docs/inputs.md)
        args.configured_version = config.vllm_version
    if config.env and isinstance(getattr(args, "env", None), list):
        given = {item.partition("=")[0] for item in args.env}
        args.env = [f"{k}={v}" for k, v in config.env.items() if k not in given] + args.env
    if config.model_paths and isinstance(getattr(args, "model_path", None), list):
        rules = []
        for rule in config.model_paths:
            pattern, eq, folder = rule.partition("=")
            if eq and not Path(folder).is_absolute():
                folder = str(path.parent / folder)
            rules.append(f"{pattern}={folder}" if eq else rule)
        args.model_path = [*args.model_path, *rules]
    return args
