"""Compose's env files (``.env`` beside the compose file, a service's ``env_file``), read
by compose-go's ``dotenv`` rules, and the check that they lie where kvconfig may read."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from kvconfig.errors import InputError
from kvconfig.load import yamlfile as _yaml
from kvconfig.load.compose.interpolation import Interpolation

MAX_ENV_FILE_BYTES = 256 * 1024
"""Largest ``.env`` or ``env_file`` kvconfig reads."""


def outside(name: str, base: Path) -> bool:
    """Whether a file a compose file names lies outside what kvconfig may read (an absolute
    or ``..`` path, or a link, leading out of the allowed roots: ``kvconfig.load.roots``)."""
    from kvconfig.load import roots

    return not roots.inside(base / name, base)


def read_env_file(
    path: Path, source: str, lookup: Mapping[str, str] | None = None
) -> dict[str, str] | None:
    """A ``.env`` or ``env_file`` file read by compose's rules, or None when it does not
    exist. ``lookup`` is the environment compose takes values from first (the shell's).

    Every value is remembered as a secret (``kvconfig.secrets``): none is ever printed."""
    from kvconfig import secrets

    if not path.is_file():
        return None
    text = _yaml.decode(_yaml.read_bytes(path, source, MAX_ENV_FILE_BYTES, what="env file"), source)
    out = parse_env(text, source, lookup or {})
    secrets.remember_env(out, every_value=True)
    return out


_ENV_KEY_CHARS = frozenset("_.-[]")
_ENV_SPACE = "\t\v\f\r \x85\xa0"
_ENV_ESCAPE = re.compile(r"\\(?:[abcfnrtv$\"\\]|0[0-9]{0,3})")
_ENV_ESCAPES = {
    "a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
    '"': '"', "\\": "\\", "$": "$$", "c": "\\c",
}  # fmt: skip


def parse_env(text: str, source: str, lookup: Mapping[str, str]) -> dict[str, str]:
    """The variables of an env file, as compose-go's ``dotenv`` parser reads them
    (compose-spec/compose-go ``dotenv/parser.go``, ``dotenv/env.go``): ``#`` comment lines,
    ``export``, ``KEY=VALUE`` or ``KEY: VALUE``, a bare ``KEY`` taken from ``lookup``;
    unquoted values end at the line or at `` #``; single quotes keep their text; double
    quotes decode ``\\n``-style escapes; values (unquoted and double-quoted) are
    interpolated from ``lookup`` first, then from the keys above them."""
    out: dict[str, str] = {}
    i, line = 0, 1
    text = text.removeprefix("\ufeff")

    def err(message: str, hint: str) -> InputError:
        return InputError(message, source=source, line=line, hint=hint)

    while True:
        while i < len(text) and text[i].isspace():  # the next statement
            line += text[i] == "\n"
            i += 1
        if i >= len(text):
            return out
        if text[i] == "#":
            end = text.find("\n", i)
            if end < 0:
                return out
            i = end
            continue
        m = re.match(r"export[\s]+", text[i:])
        if m and "\n" not in m.group(0):
            i += len("export")
            while i < len(text) and text[i] in _ENV_SPACE:
                i += 1
        start, j = i, i
        sep = ""
        while j < len(text):
            c = text[j]
            if c in _ENV_SPACE:
                j += 1
                continue
            if c in "=:\n":
                sep = c
                break
            if not (c.isalnum() or c in _ENV_KEY_CHARS):
                row = text[start:].split("\n", 1)[0]
                raise err(
                    f"unexpected character {c!r} in the variable name {row!r}",
                    "write KEY=VALUE, one per line",
                )
            j += 1
        key = text[start:j].rstrip()
        if " " in key:
            raise err("a key cannot contain a space", "write KEY=VALUE, one per line")
        if not sep:  # the file ends after a bare key
            if key in lookup:
                out[key] = lookup[key]
            return out
        i = j + 1
        if sep == "\n":
            line += 1
            if key in lookup:
                out[key] = lookup[key]
            continue
        while i < len(text) and text[i] in _ENV_SPACE:
            i += 1
        scope = {**out, **lookup}
        quote = text[i] if i < len(text) and text[i] in "'\"" else ""
        if not quote:
            end = text.find("\n", i)
            end = len(text) if end < 0 else end
            value = text[i:end].split(" #", 1)[0].rstrip()
            out[key] = Interpolation(scope, source).text(value, line, key)
            i = end
            continue
        chars: list[str] = []
        k, escaped, closed = i + 1, False, False
        first_line = line
        while k < len(text):
            c = text[k]
            line += c == "\n"
            if c != quote:
                if not escaped and c == "\\":
                    escaped = True
                elif escaped:
                    escaped = False
                    chars.append("\\" + c)
                else:
                    chars.append(c)
                k += 1
                continue
            if escaped:
                escaped = False
                chars.append(c)
                k += 1
                continue
            closed = True
            break
        if not closed:
            line = first_line
            row = text[i:].split("\n", 1)[0]
            raise err(f"unterminated quoted value {row}", f"close the {quote}")
        value = "".join(chars)
        if quote == '"':
            value = _ENV_ESCAPE.sub(_env_escape, value)
            value = Interpolation(scope, source).text(value, first_line, key)
        out[key] = value
        i = k + 1


def _env_escape(m: re.Match[str]) -> str:
    """One escape as compose-go decodes it (``\\0NNN`` becomes Go's ``\\NNN``, which
    needs three octal digits; what Go refuses stays as rewritten)."""
    body = m.group(0)[1:]
    if body[0] == "0":
        digits = body[1:]
        if len(digits) == 3 and all(c in "01234567" for c in digits) and int(digits, 8) < 256:
            return chr(int(digits, 8))
        return "\\" + digits
    return _ENV_ESCAPES[body]
