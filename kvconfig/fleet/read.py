"""Reading a fleet: a native fleet file, or a list of deployments with roles.

* A YAML file whose top level has ``kvconfig_fleet: 1`` is a native fleet file
  (``schemas.fleet.FleetFile``, docs/fleets.md).
* Anything else is a list of deployments, one engine each: ``vllm serve`` configs,
  native deployment files, or one pasted command. An engine's name is its file's stem;
  its role is the prefix of the argument (``prefill:p.yaml``, ``decode:d.yaml``,
  ``both:x.yaml``), else its ``--kv-transfer-config`` ``kv_role`` (``kv_producer`` is
  prefill, ``kv_consumer`` decode), else ``both``.
* Other readers (operator files: Kubernetes manifests, ...) register in ``READERS``: a
  function from a path to engines, or None when the file is not theirs.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kvconfig.errors import InputError
from kvconfig.fleet._load import PARALLEL_OPTIONS
from kvconfig.fleet.model import EngineSpec
from kvconfig.fleet.rules.routers import RouterSpec
from kvconfig.mirror import versions

FLEET_KEY = "kvconfig_fleet"

ROLE_PREFIXES = ("prefill", "decode", "both")

KV_ROLES = {"kv_producer": "prefill", "kv_consumer": "decode", "kv_both": "both"}
"""``kv_role`` -> fleet role, for deployments given without one."""

Reader = Callable[[Path, Mapping[str, str]], "tuple[list[EngineSpec], list[RouterSpec]] | None"]
"""A reader of other deployment files: a file's engines and the routers it deploys beside
them, or None when the file is not one it reads."""


def _split(command: str, source: str) -> list[str]:
    """A command string's words by shell quoting rules; unbalanced quotes are bad input."""
    try:
        return shlex.split(command)
    except ValueError as err:
        raise InputError(
            f"cannot split the command: {err}",
            source=source,
            key="command",
            hint="check the quotes in the command",
        ) from None


def _operator_files(
    path: Path, env: Mapping[str, str]
) -> tuple[list[EngineSpec], list[RouterSpec]] | None:
    from kvconfig.fleet.operators import read_operator_file

    return read_operator_file(path, env)


READERS: list[Reader] = [_operator_files]
"""Readers of other deployment files: each returns the engines of a file it understands,
else None; ``--env`` is the environment a file's runtime gets from the user (compose
interpolation, a launch script's caller). The first is kvconfig's operator-file readers
(Kubernetes manifests, chart values, compose files, launch scripts, ...;
``kvconfig.fleet.operators``)."""


@dataclass(frozen=True)
class FleetInput:
    """A fleet to plan."""

    source: str
    engines: tuple[EngineSpec, ...]
    routers: tuple[RouterSpec, ...] = ()
    """The KV-aware routers in front of the engines (an operator file may deploy several)."""
    vllm_version: str = versions.DEFAULT
    name: str = ""

    @property
    def router(self) -> RouterSpec:
        """The first router, or none."""
        return self.routers[0] if self.routers else RouterSpec()


def _load_yaml(path: Path, source: str) -> Any:
    from kvconfig.load import yamlfile

    return yamlfile.load(path, source)


def is_fleet_file(path: str) -> bool:
    """Whether ``path`` is a native fleet file."""
    p = Path(path)
    if p.suffix not in (".yaml", ".yml", ".json") or not p.is_file():
        return False
    try:
        doc = _load_yaml(p, path)
    except InputError:
        return False
    return isinstance(doc.data, dict) and FLEET_KEY in doc.data


def _key(loc: Sequence[str | int]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _schema_error(err: Any, source: str, doc: Any) -> InputError:
    from kvconfig._suggest import did_you_mean
    from kvconfig.schemas import fleet as F

    first = err.errors()[0]
    loc = [p for p in first["loc"] if not str(p).startswith("function-")]
    kind = first["type"]
    where = doc.line(*loc) if loc else None
    while where is None and loc:
        loc = loc[:-1]
        where = doc.line(*loc) if loc else None
    loc = [p for p in first["loc"] if not str(p).startswith("function-")]
    if kind == "extra_forbidden":
        models: dict[str, Any] = {
            "engines": F.FleetEngine,
            "router": F.Router,
            "offload": F.OffloadTier,
            "parallelism": F.Parallelism,
            "kv_transfer_config": F.KVTransferConfig,
        }
        parent = next(
            (str(p) for p in reversed(loc[:-1]) if isinstance(p, str) and p in models), ""
        )
        model = models.get(parent, F.FleetFile)
        names = [(f.alias or n) for n, f in model.model_fields.items()]
        return InputError(
            "unknown key",
            source=source,
            line=where,
            key=_key(loc),
            hint=did_you_mean(str(loc[-1]), names) or "remove it",
        )
    simple = {
        "missing": ("required key is missing", "add it"),
        "too_short": ("needs at least one entry", "add one"),
        "string_type": ("expected a string", "quote the value"),
        "int_type": ("expected an integer", "write a whole number, unquoted"),
        "bool_type": ("expected true or false", "write true or false, unquoted"),
        "dict_type": ("expected a mapping", "write it as 'key: value' lines"),
        "model_type": ("expected a mapping", "write it as 'key: value' lines"),
        "list_type": ("expected a list", "write it as '- item' lines"),
        "greater_than_equal": ("expected a positive number", "use 1 or more"),
    }
    if kind in simple:
        message, hint = simple[kind]
        return InputError(message, source=source, line=where, key=_key(loc), hint=hint)
    if kind == "literal_error":
        expected = str((first.get("ctx") or {}).get("expected", ""))
        return InputError(
            f"expected {expected}, got {first.get('input')!r}",
            source=source,
            line=where,
            key=_key(loc),
            hint="use one of those",
        )
    msg = str(first["msg"]).removeprefix("Value error, ")
    return InputError(msg, source=source, line=where, key=_key(loc), hint="see docs/fleets.md")


def _offload_entry(tier: Any) -> dict[str, Any]:
    extra: dict[str, Any] = {"cpu_bytes_to_use": tier.cpu_bytes_to_use}
    if tier.block_size is not None:
        extra["block_size"] = tier.block_size
    if tier.blocks_per_chunk is not None:
        extra["blocks_per_chunk"] = tier.blocks_per_chunk
    if tier.kind == "fs":
        extra["spec_name"] = "TieringOffloadingSpec"
        extra["secondary_tiers"] = [{"type": "fs", "root_dir": tier.root_dir}]
    return {
        "kv_connector": "OffloadingConnector",
        "kv_role": "kv_both",
        "kv_connector_extra_config": extra,
    }


def read_fleet_file(path: str, *, platform: str | None = None) -> FleetInput:
    """A native fleet file."""
    from pydantic import ValidationError

    from kvconfig.schemas.fleet import FleetFile

    p = Path(path)
    doc = _load_yaml(p, path)
    try:
        fleet = FleetFile.model_validate(doc.data)
    except ValidationError as err:
        raise _schema_error(err, path, doc) from None
    engines = []
    for i, e in enumerate(fleet.engines):
        where = f"{path}:{doc.line('engines', i) or 1}"
        given: dict[str, Any] = {}
        for field_name, option in PARALLEL_OPTIONS.items():
            value = getattr(e.parallelism, field_name)
            if value is not None:
                given[option] = value
        kv = (
            e.kv_transfer_config.model_dump(mode="json", exclude_unset=True)
            if e.kv_transfer_config is not None
            else None
        )
        tiers = [t for t in fleet.offload if not t.engines or e.name in t.engines]
        if kv is not None:
            given["kv-transfer-config"] = kv
        target: str | tuple[str, ...]
        if e.deployment is not None:
            target = e.deployment
            source = e.deployment
        else:
            cmd = e.command
            argv = _split(cmd, f"{path}#{e.name}") if isinstance(cmd, str) else list(cmd or [])
            target = tuple(argv)
            source = f"{path}#{e.name}"
        engines.append(
            EngineSpec(
                name=e.name,
                role=e.role,
                target=target,
                cwd=p.resolve().parent,
                source=source,
                platform=e.platform or fleet.platform or platform,
                replicas=e.replicas,
                given=given,
                env=dict(e.env),
                hooks=e.hooks or fleet.hooks,
                offload=tuple(_offload_entry(t) for t in tiers),
                where=where,
                vllm_version=e.vllm_version,
            )
        )
    r = fleet.router
    router = RouterSpec(
        kind=r.kind,
        block_size=r.block_size,
        hashes_prompts=r.hashes_prompts,
        hash_algo=r.hash_algo,
        hash_seed=r.hash_seed,
        engines=tuple(r.engines),
    )
    routers = (router,) if router.kind != "none" else ()
    return FleetInput(path, tuple(engines), routers, fleet.vllm_version, fleet.name)


def read_deployments(
    paths: Sequence[str],
    *,
    command: Sequence[str] | None = None,
    platform: str | None = None,
    hooks: str | None = None,
    env: Mapping[str, str] | None = None,
) -> FleetInput:
    """A list of deployments (optionally ``role:`` prefixed) and one pasted command."""
    engines: list[EngineSpec] = []
    names: set[str] = set()
    routers: list[RouterSpec] = []

    def name_for(stem: str) -> str:
        n, i = stem, 2
        while n in names:
            n, i = f"{stem}-{i}", i + 1
        names.add(n)
        return n

    for raw in paths:
        role = "auto"
        item = raw
        head, sep, rest = raw.partition(":")
        if sep and head in ROLE_PREFIXES and rest:
            role, item = head, rest
        path = Path(item)
        read = None
        for reader in READERS:
            read = reader(path, env or {})
            if read is not None:
                break
        if read is not None:
            found, beside = read
            routers += beside
            for spec in found:
                names.add(spec.name)
                engines.append(
                    replace(
                        spec,
                        platform=spec.platform or platform,
                        env={**spec.env, **(env or {})},
                        hooks=spec.hooks or hooks,
                    )
                )
            continue
        if not path.exists():
            raise InputError("no such file", source=item, hint="check the path")
        engines.append(
            EngineSpec(
                name=name_for(path.stem),
                role=role,
                target=str(path.resolve()),
                cwd=Path.cwd(),
                source=item,
                platform=platform,
                env=dict(env or {}),
                hooks=hooks,
                where=item,
            )
        )
    if command:
        argv = list(command)
        if len(argv) == 1 and " " in argv[0]:
            argv = _split(argv[0], "<command>")
        engines.append(
            EngineSpec(
                name=name_for("command"),
                role="auto",
                target=tuple(argv),
                cwd=Path.cwd(),
                source="<command>",
                platform=platform,
                env=dict(env or {}),
                hooks=hooks,
                where="<command>",
            )
        )
    if not engines:
        raise InputError("no engine given", hint="pass a fleet file or deployment files")
    return FleetInput(", ".join(paths) or "<command>", tuple(engines), tuple(routers))


def read(
    paths: Sequence[str],
    *,
    command: Sequence[str] | None = None,
    platform: str | None = None,
    hooks: str | None = None,
    env: Mapping[str, str] | None = None,
) -> FleetInput:
    """A fleet from the command line's arguments (see the module docstring)."""
    fleet_files = [p for p in paths if is_fleet_file(p)]
    if fleet_files:
        if len(paths) > 1 or command:
            raise InputError(
                "a fleet file describes the whole fleet",
                source=fleet_files[0],
                hint="lint one fleet file at a time, without other deployments",
            )
        return read_fleet_file(fleet_files[0], platform=platform)
    return read_deployments(paths, command=command, platform=platform, hooks=hooks, env=env)
