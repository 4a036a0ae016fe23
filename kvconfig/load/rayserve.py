"""Ray Serve LLM configs: one engine per ``LLMConfig``.

A ``serve run`` config lists ``applications``; those built by
``ray.serve.llm:build_openai_app`` take ``args.llm_configs`` (mappings, or paths to YAML
files holding one), ``build_pd_openai_app`` takes ``args.prefill_config`` and
``args.decode_config``. A file may also be a bare ``LLMServingArgs`` (``llm_configs``) or
one ``LLMConfig``. Of each ``LLMConfig`` kvconfig reads ``model_loading_config``
(``model_id``, ``model_source``: a Hugging Face id or path, or a mapping with a
``bucket_uri``), ``engine_kwargs`` (vLLM's engine arguments, passed to vLLM as keyword
arguments, written here as the serve words that set them), ``accelerator_type`` and
``runtime_env.env_vars`` (the application's first, the config's over them). Ray passes
vLLM the model and served name itself and refuses them in ``engine_kwargs``
(``VLLMEngineConfig.get_initialization_kwargs``,
``python/ray/llm/_internal/serve/engines/vllm/vllm_models.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kvconfig._suggest import did_you_mean
from kvconfig.errors import InputError
from kvconfig.load import yamlfile as _yaml
from kvconfig.load.engine_fields import gpu_fields, mapping
from kvconfig.load.operator_engine import Engine
from kvconfig.mirror import versions

MAX_CONFIGS = 64
"""Most ``llm_configs`` one file may list."""

NIXL_BY_DEFAULT = "prefill_decode_disagg.prefill_decode_disagg:build_app"
"""The first P/D builder of Ray Serve LLM (``build_app`` of ray
``python/ray/llm/_internal/serve/deployments/prefill_decode_disagg/prefill_decode_disagg.py``):
a prefill or decode config whose ``engine_kwargs`` has no ``kv_transfer_config`` gets
``KVTransferConfig(kv_connector="NixlConnector", kv_role="kv_both")``. Its successor
``build_pd_openai_app`` sets none (``PDServingArgs._validate_kv_transfer_config``)."""

NO_LLM_CONFIG = "no LLM config found"
"""How the error for a Serve config without any ``LLMConfig`` starts."""


def _env(runtime_env: Any) -> dict[str, str]:
    if not isinstance(runtime_env, dict) or not isinstance(runtime_env.get("env_vars"), dict):
        return {}
    return {str(k): str(v) for k, v in runtime_env["env_vars"].items()}


def engines(doc: _yaml.Document, base: Path) -> list[Engine]:
    """The ``LLMConfig`` entries of a Ray Serve file."""
    data = doc.data
    jobs: list[
        tuple[str, Any, tuple[str | int, ...], dict[str, str], str | None, _yaml.Document]
    ] = []
    if isinstance(data.get("applications"), list):
        for a, app in enumerate(data["applications"]):
            if not isinstance(app, dict):
                continue
            app_name = str(app.get("name") or f"app{a}")
            args = mapping(app.get("args"))
            env = _env(app.get("runtime_env"))
            start = len(jobs)
            _collect(args, ("applications", a, "args"), app_name, env, doc, base, jobs)
            if str(app.get("import_path") or "").endswith(NIXL_BY_DEFAULT):
                jobs[start:] = [_nixl_default(job) for job in jobs[start:]]
    else:
        _collect(data, (), Path(doc.source).stem, {}, doc, base, jobs)
    if not jobs:
        raise InputError(
            f"{NO_LLM_CONFIG}: no application lists llm_configs, llm_config (or "
            "prefill_config and decode_config)",
            source=doc.source,
            line=1,
            hint="kvconfig reads ray.serve.llm configs: applications[].args.llm_configs",
        )
    return [_engine(*job, base) for job in jobs]


def _nixl_default(job: tuple[Any, ...]) -> tuple[Any, ...]:
    """A P/D job of ``NIXL_BY_DEFAULT``'s application, with that builder's connector where
    its ``engine_kwargs`` name none."""
    app, config, path, env, role, doc = job
    kwargs = config.get("engine_kwargs")
    kwargs = kwargs if isinstance(kwargs, dict) else {}
    if role is None or "kv_transfer_config" in kwargs:
        return job
    nixl = {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
    config = {**config, "engine_kwargs": {**kwargs, "kv_transfer_config": nixl}}
    return app, config, path, env, role, doc


def _collect(  # noqa: PLR0917 (a walk carrying its state)
    args: Mapping[str, Any],
    path: tuple[str | int, ...],
    app: str,
    env: dict[str, str],
    doc: _yaml.Document,
    base: Path,
    jobs: list[Any],
) -> None:
    if "model_loading_config" in args:
        jobs.append((app, args, path, env, None, doc))
        return
    # PDServingArgs.prefill_config / decode_config: a mapping, or the path of a YAML file
    # (LLMConfig.from_file; ray .../serving_patterns/prefill_decode/builder.py)
    for role in ("prefill", "decode"):
        config = args.get(f"{role}_config")
        if isinstance(config, (dict, str)):
            _one(config, (*path, f"{role}_config"), app, env, doc, base, jobs, role=role)
    # build_dp_openai_app's one LLMConfig (DPOpenAiServingArgs.llm_config, a mapping or
    # a file: ray python/ray/llm/_internal/serve/serving_patterns/data_parallel/builder.py)
    single = args.get("llm_config")
    if isinstance(single, (dict, str)):
        _one(single, (*path, "llm_config"), app, env, doc, base, jobs)
    configs = args.get("llm_configs")
    if not isinstance(configs, list):
        return
    if len(configs) > MAX_CONFIGS:
        raise InputError(
            f"{len(configs)} llm_configs; kvconfig reads at most {MAX_CONFIGS}",
            source=doc.source,
            line=doc.line(*path, "llm_configs"),
            key="llm_configs",
            hint="split the file",
        )
    for i, config in enumerate(configs):
        _one(config, (*path, "llm_configs", i), app, env, doc, base, jobs)


def _one(  # noqa: PLR0917 (part of the walk)
    config: Any,
    where: tuple[str | int, ...],
    app: str,
    env: dict[str, str],
    doc: _yaml.Document,
    base: Path,
    jobs: list[Any],
    role: str | None = None,
) -> None:
    """One ``LLMConfig``: a mapping, or the path of a YAML file holding one."""
    if isinstance(config, str):
        from kvconfig.load import roots

        file = _config_file(config, base)
        if not roots.inside(file, base):
            raise InputError(
                f"{config!r} lies outside the repository; kvconfig does not read it",
                source=doc.source,
                line=doc.line(*where),
                key=str(where[-1] if isinstance(where[-1], str) else where[-2]),
                hint="put the LLM config beside the Serve config, or allow its folder "
                "with --allow-path DIR",
            )
        sub = _yaml.load(file, config)
        if not isinstance(sub.data, dict):
            raise InputError(
                "expected an LLMConfig mapping",
                source=config,
                line=1,
                hint="see Ray Serve LLM's LLMConfig",
            )
        jobs.append((app, sub.data, (), env, role, sub))
    elif isinstance(config, dict):
        jobs.append((app, config, where, env, role, doc))


def _config_file(config: str, base: Path) -> Path:
    """Where Serve finds an ``LLMConfig`` file: a relative path is opened from the Serve
    process's working folder (``PDServingArgs.parse_args`` and ``LLMServingArgs`` open it
    as given), which the file does not name. The Serve config's own folder when the path
    is there, else the nearest folder above it, inside the repository, that holds it (a
    release test's ``./configs/model_config/...`` from the folder that holds
    ``configs/``); the own folder's path when none does (read as missing)."""
    from kvconfig.load import roots

    if Path(config).is_absolute():
        return Path(config)
    for folder in (base, *base.parents):
        candidate = folder / config
        if not roots.inside(candidate):
            break
        if candidate.is_file():
            return candidate
    return base / config


def _engine(  # noqa: PLR0917 (one call site)
    app: str,
    config: Mapping[str, Any],
    path: tuple[str | int, ...],
    app_env: dict[str, str],
    role: str | None,
    doc: _yaml.Document,
    base: Path,
) -> Engine:
    from kvconfig.load.argv_table import argv_from_kwargs, options

    line = doc.line(*path) if path else 1
    loading = config.get("model_loading_config")
    if not isinstance(loading, dict):
        raise InputError(
            "missing: Ray Serve needs it",
            source=doc.source,
            line=line,
            key=_key(path, "model_loading_config"),
            hint="add model_loading_config: {model_id: NAME, model_source: ORG/NAME}",
        )
    model_id = str(loading.get("model_id") or "")
    source_field = loading.get("model_source", model_id)
    model_uri = None
    if isinstance(source_field, dict):
        model_uri = str(source_field.get("bucket_uri") or "")
        model = model_id
    else:
        model = str(source_field)
    kwargs = config.get("engine_kwargs") or {}
    if not isinstance(kwargs, dict):
        raise InputError(
            "engine_kwargs: expected a mapping of vLLM engine arguments",
            source=doc.source,
            line=doc.line(*path, "engine_kwargs"),
            key=_key(path, "engine_kwargs"),
            hint="write engine_kwargs: {block_size: 64}",
        )
    for key in ("model", "served_model_name"):
        if key in kwargs:  # VLLMEngineConfig.get_initialization_kwargs refuses both
            raise InputError(
                f"{key} is not allowed in engine_kwargs: Ray Serve LLM sets it from "
                "model_loading_config and refuses it here",
                source=doc.source,
                line=doc.line(*path, "engine_kwargs", key),
                key=_key(path, f"engine_kwargs.{key}"),
                hint="write model_loading_config: {model_id: NAME, model_source: ORG/NAME}",
            )
    table = options(versions.DEFAULT)
    for key in kwargs:
        option = "--" + str(key).replace("_", "-")
        if option not in table:
            names = [o[2:].replace("-", "_") for o in table if o.startswith("--")]
            raise InputError(
                f"unknown vLLM engine argument {key!r}: vLLM refuses it",
                source=doc.source,
                line=doc.line(*path, "engine_kwargs", key),
                key=_key(path, f"engine_kwargs.{key}"),
                hint=did_you_mean(str(key), names) or "see vLLM's engine arguments",
            )
    argv = [model, *argv_from_kwargs(kwargs)]
    if model_id:
        argv += ["--served-model-name", model_id]
    env = {**app_env, **_env(config.get("runtime_env"))}
    accelerator = config.get("accelerator_type")
    labels = [str(accelerator)] if accelerator else []
    gpu, platforms, notes = gpu_fields(
        labels, doc.line(*path, "accelerator_type") if path else None
    )
    parallelism: dict[str, int] = {}
    for key, name in (("tensor_parallel_size", "tensor"), ("pipeline_parallel_size", "pipeline")):
        if isinstance(kwargs.get(key), int):
            parallelism[name] = kwargs[key]
    replicas = _replicas(config.get("deployment_config"))
    if replicas is not None:
        parallelism["replicas"] = replicas
    label = f"rayserve/{app}/{model_id or model}" + (f"/{role}" if role else "")
    return Engine(
        name=label,
        source=doc.source,
        line=line,
        argv=tuple(argv),
        entry="ray serve",
        parser="serve",
        env=env,
        gpu=gpu,
        platforms=platforms,
        role=role,
        parallelism=parallelism,
        model_uri=model_uri,
        base=str(base),
        notes=tuple(notes),
    )


def _replicas(deployment: Any) -> int | None:
    """How many replicas Serve runs: ``num_replicas``, or an ``autoscaling_config`` whose
    ``min_replicas`` and ``max_replicas`` are equal (Serve's autoscaler keeps the count
    within them: ``AutoscalingConfig``, ray python/ray/serve/config.py); None when it
    varies at run time."""
    if not isinstance(deployment, dict):
        return None
    count = deployment.get("num_replicas")
    if isinstance(count, int) and not isinstance(count, bool):
        return count
    scaling = deployment.get("autoscaling_config")
    if isinstance(scaling, dict):
        low, high = scaling.get("min_replicas"), scaling.get("max_replicas")
        if isinstance(low, int) and not isinstance(low, bool) and low == high:
            return low
    return None


def _key(path: tuple[str | int, ...], field: str) -> str:
    """``applications[0].args.llm_configs[1].engine_kwargs``: where a field is."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return f"{text}.{field}" if text else field
