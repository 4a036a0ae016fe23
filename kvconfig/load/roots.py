"""Where kvconfig may read: the one function that decides, and the check every reader of
a file named inside another file makes.

kvconfig reads the files given on its command line. A file they name (a compose
``env_file`` or bind mount, a Ray Serve ``llm_configs`` path, a local model folder) is
read only when it lies under an allowed root: the repository of the working folder and of
each file given (the folder holding ``.git``; the folder itself outside a repository),
the folders ``--allow-path`` names, ``--model-path`` targets, and the Hugging Face cache
(model ids). Links are followed before the check, so
a link inside the repository to ``/etc`` is outside. Anything else is not read: the
reader says so in one line (a note, or KV903). docs/security.md.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator, Sequence
from contextvars import ContextVar
from pathlib import Path

_ROOTS: ContextVar[tuple[Path, ...] | None] = ContextVar("kvconfig_roots", default=None)


def allowed_roots(
    files: Sequence[str] = (), allowed: Iterable[str | Path] = (), cwd: Path | None = None
) -> tuple[Path, ...]:
    """The folders kvconfig may read under: the repository (``repository``) of the working
    folder and of each of ``files`` (the command line's inputs; ``-`` is standard input),
    ``allowed`` (the command line's ``--allow-path`` and ``--model-path`` folders; the
    repository configuration's are added here too), and the Hugging Face cache. Names
    that are no usable path (a NUL byte, too long) add nothing."""
    from kvconfig.load.hub import cache_dir

    base = (cwd or Path.cwd()).resolve()
    roots = [repository(base)]
    for f in files:
        if f and f != "-":
            with contextlib.suppress(OSError, ValueError, RuntimeError):
                p = (base / os.path.expanduser(f)).resolve()
                roots.append(repository(p if p.is_dir() else p.parent))
    for a in allowed:
        with contextlib.suppress(OSError, ValueError, RuntimeError):
            roots.append((base / os.path.expanduser(str(a))).resolve())
    with contextlib.suppress(OSError, ValueError, RuntimeError):
        roots.append(cache_dir().resolve())
    return tuple(dict.fromkeys(roots))


def of_command(args: object) -> tuple[Path, ...]:
    """Where one command may read: the working folder, the given files' folders
    (``deployments``, ``deployment``, ``a``, ``b`` of the command line's namespace), its
    ``allow_path`` and ``model_path`` folders."""
    files = [
        *(getattr(args, "deployments", None) or []),
        *[getattr(args, name, None) or "" for name in ("deployment", "a", "b")],
    ]
    allowed = list(getattr(args, "allow_path", None) or [])
    for rule in getattr(args, "model_path", None) or []:
        allowed.append(str(rule).rpartition("=")[2])
    return allowed_roots([str(f) for f in files if f], [a for a in allowed if a])


def repository(folder: Path) -> Path:
    """The root of the git repository ``folder`` lies in (the folder holding ``.git``), or
    ``folder`` itself outside any repository."""
    for candidate in (folder, *folder.parents):
        with contextlib.suppress(OSError):
            if (candidate / ".git").exists():
                return candidate
    return folder


@contextlib.contextmanager
def reading_within(roots: tuple[Path, ...]) -> Iterator[None]:
    """Readers inside this block read only under ``roots``."""
    token = _ROOTS.set(roots)
    try:
        yield
    finally:
        _ROOTS.reset(token)


def current() -> tuple[Path, ...]:
    """The allowed roots now (outside ``reading_within``: the working folder's)."""
    roots = _ROOTS.get()
    return roots if roots is not None else allowed_roots()


def inside(path: Path, near: Path | None = None) -> bool:
    """Whether ``path`` (links followed) lies under an allowed root, or under ``near``
    (the folder of the file that names it, itself read from an allowed place)."""
    try:
        real = path.resolve()
        roots = (*current(), near.resolve()) if near is not None else current()
    except (OSError, RuntimeError, ValueError):
        return False
    return any(real == r or real.is_relative_to(r) for r in roots)


__all__ = ["allowed_roots", "current", "inside", "of_command", "reading_within"]
