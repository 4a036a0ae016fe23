"""docker-compose files: the vLLM services and their command lines.

Compose (the Compose Specification, ``compose-spec/compose-spec``) first interpolates
``${VAR}``, ``${VAR:-default}``, ``${VAR-default}``, ``${VAR:?message}``,
``${VAR:+alt}`` and ``$VAR`` in every value, from the shell environment and the ``.env``
file beside the compose file (``$$`` is a literal ``$``). A service's command line is its
``entrypoint`` (or the image's: ``vllm serve`` for the ``vllm/vllm-openai`` images)
followed by its ``command``; either may be a list or a string, which compose splits with
shell quoting rules but does not run in a shell. ``environment`` (a list of ``KEY=VALUE``
or a mapping) and ``env_file`` give the container's variables; bind mounts
(``volumes: [./models:/models]``) are recorded so paths inside the container can be
mapped back to this machine.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kvconfig.errors import InputError
from kvconfig.load import yamlfile as _yaml
from kvconfig.load.engine_fields import check_words, image_version, is_vllm_image
from kvconfig.load.operator_engine import Engine, Note, server_start

MAX_ENV_FILE_BYTES = 256 * 1024
"""Largest ``.env`` or ``env_file`` kvconfig reads."""

_VAR = re.compile(r"\$(\$|\{|[A-Za-z_][A-Za-z0-9_]*)")


def read_env_file(
    path: Path, source: str, lookup: Mapping[str, str] | None = None
) -> dict[str, str] | None:
    """A ``.env`` or ``env_file`` file read by compose's rules, or None when it does not
    exist. ``lookup`` is the environment compose takes values from first (the shell's)."""
    if not path.is_file():
        return None
    text = _yaml.decode(_yaml.read_bytes(path, source, MAX_ENV_FILE_BYTES, what="env file"), source)
    return parse_env(text, source, lookup or {})


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


def split_command(text: str) -> tuple[list[str], str, bool]:
    """A string ``command``/``entrypoint`` split as compose splits it: (words, the text
    compose drops, whether the string is invalid).

    compose-go (``types/command.go``) calls ``shellwords.Parse`` of mattn/go-shellwords
    v1.0.12 (its go.mod) without environment or backtick parsing: quotes and backslashes
    as a shell has them, but no expansion, ``#`` is no comment, and reading stops at the
    first unquoted ``;`` ``&`` ``|`` ``<`` ``>`` (a ``2>`` drops its ``2``). A ``(`` that
    does not open ``$(`` is invalid.
    """
    args: list[str] = []
    buf = ""
    escaped = double = single = back = dollar = False
    got = 0  # 0: nothing, 1: a word, 2: a word that closed a quote
    pos = -1
    i = -1
    for r in text:
        i += 1
        if escaped:
            buf += r
            escaped = False
            got = 1
            continue
        if r == "\\":
            if single:
                buf += r
            else:
                escaped = True
            continue
        if r in " \t\r\n":
            if single or double or back or dollar:
                buf += r
            elif got:
                args.append(buf)
                buf, got = "", 0
            continue
        if r == "`" and not single and not double and not dollar:
            back = not back
        elif r == ")" and not single and not double and not back:
            dollar = not dollar
        elif r == "(" and not single and not double and not back:
            if not dollar and buf.endswith("$"):
                dollar = True
                buf += "("
                continue
            return args, "", True
        elif r == '"' and not single and not dollar:
            if double:
                got = 2
            double = not double
            continue
        elif r == "'" and not double and not dollar:
            if single:
                got = 2
            single = not single
            continue
        elif r in ";&|<>" and not (single or double or back or dollar):
            if r == ">" and buf and "0" <= buf[0] <= "9":
                i -= 1
                got = 0
            pos = i
            break
        got = 1
        buf += r
    if got:
        args.append(buf)
    if escaped or single or double or back or dollar:
        return args, "", True
    dropped = text[pos:].strip() if pos >= 0 else ""
    return args, dropped, False


class Interpolation:
    """Compose's variable interpolation, from a fixed set of variables."""

    def __init__(self, variables: Mapping[str, str], source: str) -> None:
        self.variables = variables
        self.source = source
        self.unset: list[str] = []

    def text(self, value: str, line: int | None, key: str) -> str:
        out: list[str] = []
        i = 0
        while i < len(value):
            c = value[i]
            if c != "$":
                out.append(c)
                i += 1
                continue
            nxt = value[i + 1 : i + 2]
            if nxt == "$":
                out.append("$")
                i += 2
                continue
            if nxt == "{":
                depth, j = 1, i + 2
                while j < len(value) and depth:
                    depth += {"{": 1, "}": -1}.get(value[j], 0)
                    j += 1
                if depth:
                    raise InputError(
                        f"unterminated ${{ in {value!r}",
                        source=self.source,
                        line=line,
                        key=key,
                        hint="close it with }, or write $$ for a literal $",
                    )
                out.append(self._expr(value[i + 2 : j - 1], line, key))
                i = j
                continue
            m = re.match(r"[A-Za-z_][A-Za-z0-9_]*", value[i + 1 :])
            if m:
                out.append(self._value(m.group(0), line, key))
                i += 1 + m.end()
                continue
            out.append(c)
            i += 1
        return "".join(out)

    def _value(self, name: str, line: int | None, key: str) -> str:
        if name in self.variables:
            return self.variables[name]
        if name not in self.unset:
            self.unset.append(name)
        return ""

    def _expr(self, expr: str, line: int | None, key: str) -> str:
        m = re.match(r"([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])(.*))?$", expr, re.S)
        if m is None:
            raise InputError(
                f"invalid interpolation ${{{expr}}}",
                source=self.source,
                line=line,
                key=key,
                hint="write ${NAME}, ${NAME:-default} or $$ for a literal $",
            )
        name, op, arg = m.group(1), m.group(2), m.group(3) or ""
        is_set = name in self.variables
        value = self.variables.get(name, "")
        if not op:
            return self._value(name, line, key)
        present = is_set and (bool(value) or not op.startswith(":"))
        kind = op[-1]
        if kind == "-":
            return value if present else self.text(arg, line, key)
        if kind == "+":
            return self.text(arg, line, key) if present else ""
        if not present:
            raise InputError(
                f"${{{name}}} is required: {arg or 'it is not set'}",
                source=self.source,
                line=line,
                key=key,
                hint=f"set {name} in the .env file beside the compose file, or pass "
                f"--env {name}=VALUE (the shell environment compose would use)",
            )
        return value

    def walk(self, node: Any, doc: _yaml.Document, path: tuple[str | int, ...]) -> Any:
        if isinstance(node, str):
            return self.text(node, doc.line(*path), _field(path))
        if isinstance(node, dict):
            return {k: self.walk(v, doc, (*path, k)) for k, v in node.items()}
        if isinstance(node, list):
            return [self.walk(v, doc, (*path, i)) for i, v in enumerate(node)]
        return node


def _words(
    value: Any, doc: _yaml.Document, path: tuple[str | int, ...], key: str, notes: list[Note]
) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        words, dropped, invalid = split_command(value)
        if invalid:
            raise InputError(
                f"{path[-1]}: compose cannot split {value!r} (an unclosed quote or "
                "backslash, or a '(' that does not open $(...))",
                source=doc.source,
                line=doc.line(*path),
                key=key,
                hint=f'close the quote, or write {path[-1]} as a list: ["...", "..."]',
            )
        if dropped:
            notes.append(
                Note(
                    "dropped-words",
                    f"compose stops reading {path[-1]} at {dropped[:1]!r}: "
                    f"{dropped!r} never runs (use sh -c for a pipeline or redirection)",
                    doc.line(*path),
                    str(path[-1]),
                )
            )
        return words
    if isinstance(value, list):
        return ["" if v is None else str(v) for v in value]
    raise InputError(
        f"{path[-1]}: expected a string or a list, got {value!r}",
        source=doc.source,
        line=doc.line(*path),
        key=key,
        hint=f'write {path[-1]}: ["..."]',
    )


def engines(doc: _yaml.Document, base: Path, env: Mapping[str, str]) -> list[Engine]:
    """One engine per service that starts a vLLM server."""
    from kvconfig.load.shell import servers
    from kvconfig.load.shell.script import Command, commands
    from kvconfig.load.shell.wrappers import shell_script, unwrap

    dotenv = read_env_file(base / ".env", str(Path(doc.source).parent / ".env"), env) or {}
    interp = Interpolation({**dotenv, **env}, doc.source)
    services = doc.data["services"]
    out: list[Engine] = []
    found: list[str] = []
    for sname, raw in services.items():
        if not isinstance(raw, dict):
            continue
        path: tuple[str | int, ...] = ("services", sname)
        label = f"compose/{sname}"
        interp.unset = []
        svc = interp.walk(raw, doc, path)
        line = doc.line(*path)
        image = svc.get("image") if isinstance(svc.get("image"), str) else None
        split_notes: list[Note] = []
        entrypoint = _words(svc.get("entrypoint"), doc, (*path, "entrypoint"), label, split_notes)
        command = _words(svc.get("command"), doc, (*path, "command"), label, split_notes)
        variables, unknown, sources = _environment(svc, doc, path, base, label, interp.variables)
        if entrypoint:
            words = entrypoint + command
        elif is_vllm_image(image):
            words = ["vllm", "serve", *command]
        else:
            words = command
        starts: list[tuple[tuple[str, str, list[str]], Command | None]] = []
        detected = shell_script(words)
        if detected is not None:
            at, dialect = detected
            env_for_shell: dict[str, str | None] = {**variables, **{n: None for n in unknown}}
            cmds = commands(
                words[at], env_for_shell, words[at + 1 :], unknown_rest=bool(sources),
                source=doc.source, line=doc.line(*path, "command") or line, key=label,
                dialect=dialect,
            )  # fmt: skip
            chosen, problem = servers(cmds, lambda w: server_start(w) is not None)
            if problem:
                raise InputError(
                    f"{problem}; kvconfig cannot tell which one runs",
                    source=doc.source,
                    line=line,
                    key=label,
                    hint="run each vLLM server in its own service",
                )
            for cmd in chosen:
                start = server_start(cmd.words)
                assert start is not None
                starts.append((start, cmd))
        else:
            inner, _, _, _ = unwrap(words)
            start = server_start(inner if inner is not None else words)
            if start is not None:
                starts.append((start, None))
        if not starts:
            found.append(f"{label} runs {' '.join(words[:2]) or 'its image'}")
            continue
        for k, one in enumerate(starts):
            out.append(
                _engine(
                    one, f"{label}#{k + 1}" if len(starts) > 1 else label, svc, doc, path, base,
                    interp.unset, variables, unknown, sources, entrypoint, image, split_notes,
                )
            )  # fmt: skip
    if not out:
        raise InputError(
            "no vLLM service found" + (f": {'; '.join(found[:3])}" if found else ""),
            source=doc.source,
            line=doc.line("services"),
            hint="kvconfig reads services whose command starts 'vllm serve' (or a "
            "vllm/vllm-openai image given only command)",
        )
    return out


def _engine(  # noqa: PLR0917 (one service's facts)
    one: tuple[tuple[str, str, list[str]], Any],
    label: str,
    svc: Mapping[str, Any],
    doc: _yaml.Document,
    path: tuple[str | int, ...],
    base: Path,
    unset: list[str],
    variables: dict[str, str],
    unknown: list[str],
    sources: list[str],
    entrypoint: list[str],
    image: str | None,
    split_notes: list[Note],
) -> Engine:
    line = doc.line(*path)
    (entry, parser, argv), script_cmd = one
    check_words(argv, doc.source, line, label)
    notes: list[Note] = list(split_notes)
    for name in unset:
        notes.append(
            Note(
                "unset-variable",
                f"${{{name}}} is not set in .env beside the file: compose substitutes "
                "an empty string",
                line,
                name,
            )
        )
    run_env = dict(variables)
    if script_cmd is not None:
        run_env.update({k: v for k, v in script_cmd.env.items() if v is not None})
        for i, what in script_cmd.unknown:
            notes.append(
                Note(
                    "unknown-value",
                    f"{what} in argument {i + 1} is only known at run time",
                    line,
                )
            )
        for w in script_cmd.when:
            notes.append(Note("run-time-branch", f"this vLLM command runs only on {w}", line))
    if entry == "dynamo.vllm":
        from kvconfig.load import dynamo_args

        split = dynamo_args.split_args(argv, line)
        argv, defaults = split.argv, split.defaults
        notes += split.notes
    else:
        defaults = {}
    version, vnotes = image_version(image, doc.line(*path, "image") or line)
    notes += vnotes
    gpus = _gpu_count(svc)
    return Engine(
        name=label,
        source=doc.source,
        line=line,
        argv=tuple(argv),
        entry=entry
        if entry != "vllm serve" or entrypoint or not is_vllm_image(image)
        else "image entry point",
        parser=parser,
        env=run_env,
        env_unknown=tuple(unknown),
        env_from=tuple(sources),
        vllm_version=version,
        image=image,
        parallelism={"gpus": gpus} if gpus else {},
        mounts=tuple(_mounts(svc, base)),
        defaults=defaults,
        base=str(base),
        notes=tuple(notes),
    )


def _environment(  # noqa: PLR0917 (one service's facts)
    svc: Mapping[str, Any],
    doc: _yaml.Document,
    path: tuple[str | int, ...],
    base: Path,
    label: str,
    lookup: Mapping[str, str],
) -> tuple[dict[str, str], list[str], list[str]]:
    """(variables, names without a value here, env files that could not be read)."""
    variables: dict[str, str] = {}
    unknown: list[str] = []
    sources: list[str] = []
    files = svc.get("env_file")
    for item in [files] if isinstance(files, (str, dict)) else files or []:
        name = item.get("path") if isinstance(item, dict) else item
        if not isinstance(name, str):
            continue
        read = read_env_file(base / name, name, lookup)
        if read is None:
            sources.append(f"env_file {name}")
        else:
            variables.update(read)
    env = svc.get("environment")
    if isinstance(env, dict):
        for k, v in env.items():
            if v is None:
                unknown.append(str(k))
            else:
                variables[str(k)] = str(v).lower() if isinstance(v, bool) else str(v)
    elif isinstance(env, list):
        for item in env:
            name, eq, value = str(item).partition("=")
            if eq:
                variables[name] = value
            else:
                unknown.append(name)
    elif env is not None:
        raise InputError(
            "environment: expected a list of KEY=VALUE or a mapping",
            source=doc.source,
            line=doc.line(*path, "environment"),
            key=label,
            hint="write environment: {KEY: VALUE}",
        )
    return variables, unknown, sources


def _gpu_count(svc: Mapping[str, Any]) -> int | None:
    deploy = svc.get("deploy")
    res = deploy.get("resources") if isinstance(deploy, dict) else None
    reservations = res.get("reservations") if isinstance(res, dict) else None
    devices = reservations.get("devices") if isinstance(reservations, dict) else None
    for device in devices if isinstance(devices, list) else []:
        if isinstance(device, dict):
            count = device.get("count")
            if isinstance(count, int):
                return count
            ids = device.get("device_ids")
            if isinstance(ids, list):
                return len(ids)
    return None


def _mounts(svc: Mapping[str, Any], base: Path) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for item in svc.get("volumes") or []:
        if isinstance(item, str):
            parts = item.split(":")
            if len(parts) >= 2 and parts[0].startswith((".", "/", "~")):
                host = Path(parts[0]).expanduser()
                out.append(
                    (parts[1], os.path.normpath(host if host.is_absolute() else base / host))
                )
        elif isinstance(item, dict) and item.get("type") == "bind":
            host = Path(str(item.get("source", ""))).expanduser()
            out.append(
                (str(item.get("target", "")), str(host if host.is_absolute() else base / host))
            )
    return out


def _field(path: tuple[str | int, ...]) -> str:
    """``compose/vllm: command[0]`` for ``("services", "vllm", "command", 0)``."""
    if len(path) >= 2 and path[0] == "services":
        rest = ""
        for part in path[2:]:
            rest += f"[{part}]" if isinstance(part, int) else (f".{part}" if rest else str(part))
        return f"compose/{path[1]}: {rest}" if rest else f"compose/{path[1]}"
    return ".".join(str(p) for p in path)
