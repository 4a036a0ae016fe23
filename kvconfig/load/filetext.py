"""Bounded reading of an input's text: only regular files, at most a given number of
bytes (a FIFO or ``/dev/zero`` cannot hang the reader), decoded as UTF-8 with a one-line
error for anything else. The YAML reader (``kvconfig.load.yamlfile``) and every other
reader of operator files take their text from here."""

from __future__ import annotations

import stat
from pathlib import Path

from kvconfig.errors import InputError

MAX_BYTES = 1024 * 1024
"""Largest configuration file kvconfig reads (1 MiB)."""


def read_bytes(path: Path, source: str, limit: int, *, what: str = "file") -> bytes:
    """At most ``limit`` bytes of a regular file; one-line InputErrors for everything else.

    Refuses folders, missing and unreadable paths, and anything that is not a regular
    file (a FIFO, a device such as ``/dev/zero``) before reading it, and files over
    ``limit`` bytes without reading past the limit.
    """
    try:
        st = path.stat()
    except FileNotFoundError:
        raise InputError(f"no such {what}", source=source, hint="check the path") from None
    except NotADirectoryError:
        raise InputError(
            f"no such {what}", source=source, hint="check the path: part of it is a file"
        ) from None
    except OSError as err:
        raise InputError(
            f"cannot read: {err.strerror or err}", source=source, hint="check the path"
        ) from None
    except ValueError:  # a NUL byte in the name
        raise InputError(
            "not a usable path (it holds a NUL byte)", source=source, hint="check the path"
        ) from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(
            "is a folder, not a file",
            source=source,
            hint="pass a file; kvconfig lint also takes folders and lints their .yaml files",
        )
    if not stat.S_ISREG(st.st_mode):
        raise InputError(
            "is a pipe, socket or device, not a regular file",
            source=source,
            hint="pass a file saved on disk",
        )
    if st.st_size > limit:
        raise InputError(
            f"is {st.st_size} bytes; kvconfig reads at most {limit} bytes",
            source=source,
            hint=f"a {what} like this is a few KiB: check that this is the right path",
        )
    try:
        with path.open("rb") as f:
            raw = f.read(limit + 1)
    except OSError as err:
        raise InputError(
            f"cannot read: {err.strerror or err}", source=source, hint="check its permissions"
        ) from None
    if len(raw) > limit:
        raise InputError(
            f"is over {limit} bytes; kvconfig reads at most {limit} bytes",
            source=source,
            hint=f"a {what} like this is a few KiB: check that this is the right path",
        )
    return raw


def decode(raw: bytes, source: str, *, what: str = "the file") -> str:
    """UTF-8 text (a leading byte-order mark is dropped); InputError names the bad byte's line."""
    try:
        return raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise InputError(
            f"not UTF-8 text: byte {err.start} is 0x{raw[err.start]:02x}",
            source=source,
            line=line,
            hint=f"save {what} as UTF-8",
        ) from None


def read_text(path: Path, source: str) -> str:
    """The file's text: refuses folders, non-files, unreadable, oversized and non-UTF-8 files."""
    return decode(read_bytes(path, source, MAX_BYTES), source)
