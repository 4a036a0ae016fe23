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

from kvconfig.errors import InputError, NoEngine
from kvconfig.load import yamlfile as _yaml
from kvconfig.load.compose.dotenv import outside, parse_env, read_env_file
from kvconfig.load.compose.interpolation import Interpolation
from kvconfig.load.compose.shellwords import split_command
from kvconfig.load.engine_fields import check_words, image_entry, image_version, is_vllm_image
from kvconfig.load.operator_engine import Engine, Note, server_start

__all__ = ["Interpolation", "engines", "outside", "parse_env", "read_env_file", "split_command"]


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

    dotenv: dict[str, str] = {}
    if not outside(".env", base):
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
        interp.unset, interp.required = [], []
        svc = interp.walk(raw, doc, path)
        interp.unset.sort(key=lambda name: not _in_command(raw, name))
        line = doc.line(*path)
        image = svc.get("image") if isinstance(svc.get("image"), str) else None
        split_notes: list[Note] = []
        entrypoint = _words(svc.get("entrypoint"), doc, (*path, "entrypoint"), label, split_notes)
        command = _words(svc.get("command"), doc, (*path, "command"), label, split_notes)
        variables, unknown, sources = _environment(svc, doc, path, base, label, interp.variables)
        if entrypoint:
            words = entrypoint + command
        elif entry := image_entry(image):
            words = [*entry, *command]
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
            chosen, problem = servers(cmds, lambda c: server_start(c.words) is not None)
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
                    interp.unset, interp.required, variables, unknown, sources, entrypoint,
                    image, split_notes,
                )
            )  # fmt: skip
    if not out:
        raise NoEngine(
            "no vLLM service found" + (f": {'; '.join(found[:3])}" if found else ""),
            source=doc.source,
            line=doc.line("services"),
            hint="kvconfig reads services whose command starts 'vllm serve' (or a "
            "vllm/vllm-openai image given only command)",
        )
    return out


def _in_command(raw: Mapping[str, Any], name: str) -> bool:
    """Whether the service's own command or entrypoint names the variable ``name``."""
    written = " ".join(str(raw.get(key, "")) for key in ("entrypoint", "command"))
    return re.search(rf"\$\{{?{re.escape(name)}(?![A-Za-z0-9_])", written) is not None


def _engine(  # noqa: PLR0917 (one service's facts)
    one: tuple[tuple[str, str, list[str]], Any],
    label: str,
    svc: Mapping[str, Any],
    doc: _yaml.Document,
    path: tuple[str | int, ...],
    base: Path,
    unset: list[str],
    required: list[str],
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
    for name in required:
        notes.append(
            Note(
                "required-variable",
                f"${{{name}}} is required (${{{name}:?}}): compose takes it from the "
                "environment it runs in, so its value is not known here",
                line,
                name,
            )
        )
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
            if not w.startswith("the status of"):
                notes.append(Note("run-time-branch", f"this vLLM command runs only on {w}", line))
    if entry == "dynamo.vllm":
        from kvconfig.load import dynamo_args

        split = dynamo_args.split_args(argv, line, image=image)
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
        if outside(name, base):
            sources.append(f"env_file {name} (outside the repository: not read)")
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
                _passed(str(k), lookup, variables, unknown)
            else:
                variables[str(k)] = str(v).lower() if isinstance(v, bool) else str(v)
    elif isinstance(env, list):
        for item in env:
            name, eq, value = str(item).partition("=")
            if eq:
                variables[name] = value
            else:
                _passed(name, lookup, variables, unknown)
    elif env is not None:
        raise InputError(
            "environment: expected a list of KEY=VALUE or a mapping",
            source=doc.source,
            line=doc.line(*path, "environment"),
            key=label,
            hint="write environment: {KEY: VALUE}",
        )
    return variables, unknown, sources


def _passed(
    name: str, lookup: Mapping[str, str], variables: dict[str, str], unknown: list[str]
) -> None:
    """A variable named without a value: compose passes the one of the environment it runs
    in (``--env``, the ``.env`` file), else it is only known at run time."""
    if name in lookup:
        variables[name] = lookup[name]
    else:
        unknown.append(name)


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
    """(path in the container, folder here) of the bind mounts whose folder kvconfig may
    read (``kvconfig.load.roots``); the others are not followed."""
    from kvconfig.load import roots

    return [(c, h) for c, h in _bind_mounts(svc, base) if roots.inside(Path(h), base)]


def _bind_mounts(svc: Mapping[str, Any], base: Path) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    volumes = svc.get("volumes")
    for item in volumes if isinstance(volumes, list) else []:
        if isinstance(item, str):
            parts = item.split(":")
            if len(parts) >= 2 and parts[0].startswith((".", "/", "~")):
                host = Path(os.path.expanduser(parts[0]))
                out.append(
                    (parts[1], os.path.normpath(host if host.is_absolute() else base / host))
                )
        elif isinstance(item, dict) and item.get("type") == "bind":
            host = Path(os.path.expanduser(str(item.get("source", ""))))
            out.append(
                (str(item.get("target", "")), str(host if host.is_absolute() else base / host))
            )
    return out
