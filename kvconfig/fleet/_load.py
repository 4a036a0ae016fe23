"""One engine of a fleet, read with kvconfig's deployment loaders.

This is the one place the fleet code reaches into ``kvconfig.load``, through the loader
the CLI and the API use (``kvconfig.load.deployment``): a ``vllm serve`` config or
command is read into vLLM's option names (``serve_options``), the fleet's parallelism
and ``--kv-transfer-config`` are set on those options as ``vllm serve`` would receive
them, and the result becomes a ``schemas.deployment.Deployment`` (``from_options``) that
``kvconfig.plan.resolve.resolve`` plans. Native files go through ``load``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvconfig.errors import InputError
from kvconfig.fleet.model import Loaded
from kvconfig.load import jsontext

if TYPE_CHECKING:
    pass

#: Fleet parallelism field -> the ``vllm serve`` option it sets.
PARALLEL_OPTIONS = {
    "tensor": "tensor-parallel-size",
    "pipeline": "pipeline-parallel-size",
    "data": "data-parallel-size",
    "decode_context": "decode-context-parallel-size",
    "prefill_context": "prefill-context-parallel-size",
    "expert": "enable-expert-parallel",
}


def _json(value: Any, source: str, key: str) -> Any:
    if isinstance(value, str):
        try:
            return jsontext.loads(value)
        except json.JSONDecodeError as err:
            raise InputError(
                f"invalid JSON: {err.msg} at column {err.colno}",
                source=source,
                key=key,
                hint="pass one JSON object",
            ) from None
    return value


def kv_transfer_of(options: Mapping[str, Any], source: str) -> dict[str, Any] | None:
    """The ``--kv-transfer-config`` of an engine's options, as a mapping."""
    value = options.get("kv-transfer-config")
    if value is None:
        return None
    data = _json(value, source, "kv-transfer-config")
    if not isinstance(data, dict):
        raise InputError(
            "expected a mapping", source=source, key="kv-transfer-config", hint="a JSON object"
        )
    return data


def _set(opts: Any, name: str, value: Any, where: str) -> None:
    """Set an option the fleet gives; one the deployment sets too must agree."""
    current = opts.values.get(name)
    if current is not None and current != value:
        same = isinstance(value, int) and not isinstance(value, bool) and str(current) == str(value)
        if not same and not (name == "kv-transfer-config" and _json(current, "", name) == value):
            raise InputError(
                f"the fleet sets --{name} {json.dumps(value)}, the deployment "
                f"{json.dumps(current) if not isinstance(current, str) else current}",
                source=where,
                key=name,
                hint="set it in one place",
            )
    opts.values[name] = value


def _model_config(base: Path, options: Mapping[str, Any]) -> dict[str, Any]:
    model = options.get("hf-config-path") or options.get("model")
    if not isinstance(model, str):
        return {}
    path = Path(model)
    if not path.is_absolute():
        path = base / path
    try:
        data = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    text = data.get("text_config")
    return {**data, **text} if isinstance(text, dict) else data


@functools.lru_cache(maxsize=256)
def _document(path: str, source: str, stamp: tuple[int, int]) -> Any:
    """A parsed YAML file, once per version of the file (fixes plan engines again)."""
    from kvconfig.load import yamlfile as _yaml

    return _yaml.load(Path(path), source)


def _parsed(path: Path, source: str) -> Any:
    try:
        st = path.stat()
        stamp = (st.st_mtime_ns, st.st_size)
    except OSError:
        stamp = (0, 0)
    return _document(str(path), source, stamp)


def load(
    target: str | Sequence[str],
    *,
    cwd: Path,
    platform: str | None,
    vllm_version: str,
    given: Mapping[str, Any],
    defaults: Mapping[str, Any] | None = None,
    override: Mapping[str, Any] | None = None,
    offload: Sequence[Mapping[str, Any]] = (),
    env: Mapping[str, str],
    hooks: str | None,
    where: str,
    engine: Any = None,
    model_paths: Any = None,
    download: bool | None = None,
    trtllm_cubins: bool | None = None,
) -> Loaded:
    """An engine: a file path (absolute, or relative to ``cwd``) or a ``vllm serve`` argv,
    with the fleet's options ``given`` (by vLLM option name) set on it, and ``override``
    replacing what the deployment says (the settings a fix tries)."""
    from dataclasses import replace

    from kvconfig.load import deployment as loader
    from kvconfig.load.platforms import parse_platform

    if engine is not None:
        from kvconfig.load.engine_options import engine_options

        opts_obj = engine_options(
            engine, version=vllm_version, model_paths=model_paths, download=download
        )
    elif isinstance(target, str):
        path = Path(target) if Path(target).is_absolute() else cwd / target
        doc = _parsed(path, target)
        if loader.is_native(doc):
            dep = loader.load(
                str(path),
                platform=platform,
                env=env,
                vllm_version=vllm_version,
                hooks=hooks,
                trtllm_cubins=trtllm_cubins,
            )
            tp = given.get("tensor-parallel-size")
            if tp is not None and tp != dep.tensor_parallel_size:
                raise InputError(
                    f"the fleet sets tensor parallelism {tp}, the native file "
                    f"{dep.tensor_parallel_size} (its sizes are per rank)",
                    source=where,
                    key="parallelism.tensor",
                    hint="set tensor_parallel_size in the native file",
                )
            if override:
                update: dict[str, Any] = {}
                if "block-size" in override:
                    update["block_size"] = override["block-size"]
                if "attention-backend" in override:
                    update["attention"] = replace(
                        dep.attention, backend=override["attention-backend"]
                    )
                dep = replace(dep, **update)
            opts = {
                "block-size": dep.block_size,
                "kv-cache-dtype": dep.kv_cache_dtype,
                "tensor-parallel-size": dep.tensor_parallel_size,
                **{k: v for k, v in given.items() if k != "tensor-parallel-size"},
            }
            if offload:
                opts["kv-transfer-config"] = with_offload(opts.get("kv-transfer-config"), offload)
            return Loaded(replace(dep, source=target), opts, dict(env), path.parent, True)
        opts_obj = loader.serve_options(target, version=vllm_version, cwd=cwd, doc=doc)
    else:
        argv = list(target)
        if argv[:2] != ["vllm", "serve"] and not (argv and "=" in argv[0]):
            argv = ["vllm", "serve", *argv]
        opts_obj = loader.serve_options(argv, version=vllm_version, cwd=cwd)
    for name, value in given.items():
        _set(opts_obj, name, value, where)
    for name, value in (defaults or {}).items():
        opts_obj.values.setdefault(name, value)
    for name, value in (override or {}).items():
        opts_obj.values[name] = value
    if offload:
        merged = with_offload(kv_transfer_of(opts_obj.values, opts_obj.source), offload)
        opts_obj.values["kv-transfer-config"] = merged
    merged_env = {**opts_obj.env, **env}
    from kvconfig.mirror.connectors.registry import effective_kv_transfer

    connector = effective_kv_transfer(
        kv_transfer_of(opts_obj.values, opts_obj.source), opts_obj.values, merged_env
    )
    if connector is not None:  # the connector --kv-offloading-size makes (VllmConfig)
        opts_obj.values["kv-transfer-config"] = connector
    if connector is not None and opts_obj.values.get("disable-hybrid-kv-cache-manager") is None:
        from kvconfig.mirror.connectors.registry import supports_hma

        if not supports_hma(connector):
            # VllmConfig turns the hybrid KV-cache manager off for such a connector
            opts_obj.values["disable-hybrid-kv-cache-manager"] = True
    fields: dict[str, Any] = {}
    if hooks is not None:
        fields["hooks"] = hooks
    if platform is not None:
        fields["platform"] = parse_platform(platform).name
    if trtllm_cubins is not None:
        fields["trtllm_cubins"] = trtllm_cubins
    if isinstance(target, str) and engine is None:
        fields["source"] = target
    dep = loader.from_options(opts_obj, version=vllm_version, env=env, overrides=fields)
    return Loaded(
        dep,
        dict(opts_obj.values),
        merged_env,
        opts_obj.base,
        False,
        _model_config(opts_obj.base, opts_obj.values),
    )


def with_offload(
    kv: Mapping[str, Any] | None, added: Sequence[Mapping[str, Any]]
) -> dict[str, Any] | None:
    """A ``--kv-transfer-config`` with offloading connectors added: the only connector, or
    beside the existing ones in a MultiConnector."""
    if not added:
        return dict(kv) if kv is not None else None
    entries = [dict(a) for a in added]
    if kv is None:
        return entries[0] if len(entries) == 1 else _multi(entries)
    if kv.get("kv_connector") == "MultiConnector":
        given = kv.get("kv_connector_extra_config")
        extra = dict(given) if isinstance(given, Mapping) else {}
        chained = extra.get("connectors")
        extra["connectors"] = [*(chained if isinstance(chained, list) else []), *entries]
        return {**kv, "kv_connector_extra_config": extra}
    return _multi([dict(kv), *entries], role=kv.get("kv_role"))


def _multi(children: list[dict[str, Any]], role: Any = "kv_both") -> dict[str, Any]:
    return {
        "kv_connector": "MultiConnector",
        "kv_role": role or "kv_both",
        "kv_connector_extra_config": {"connectors": children},
    }
