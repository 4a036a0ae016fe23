"""KServe ``LLMInferenceService``: the vLLM command its well-known presets build.

KServe merges the resource over an ``LLMInferenceServiceConfig`` preset
(``config/llmisvcconfig/`` in kserve/kserve). The presets run, in the main container,
``vllm serve /mnt/models --served-model-name NAME --port PORT`` with
``--tensor-parallel-size`` from ``spec.parallelism.tensor``, then the words of the
``VLLM_ADDITIONAL_ARGS`` variable (the presets' ``bash -c`` script ``eval``s it, so the
one shell evaluates it), then the container's ``args``. With ``spec.prefill``
the main workload is the decode pool and ``spec.prefill`` a second engine with its own
parallelism and template; with ``spec.worker`` the presets add the data-parallel
options. ``spec.kvCacheOffloading`` adds an ``OffloadingConnector``
``--kv-transfer-config``. The model is downloaded from ``spec.model.uri`` to
``/mnt/models`` (``model_uri``). ``spec.speculator`` adds a ``--speculative-config`` to
the decode workload's ``VLLM_ADDITIONAL_ARGS`` (``kvconfig.load.kserve_speculator``). A
main container that sets its own ``command`` is read as any Kubernetes container.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvconfig.load.engine_fields import listing, mapping
from kvconfig.load.kserve_speculator import speculative_arg, with_speculator
from kvconfig.load.kubernetes.resources import strings
from kvconfig.load.operator_engine import Engine

if TYPE_CHECKING:
    from kvconfig.load.kubernetes.resources import Found, Resource

MODEL_DIR = "/mnt/models"
"""Where KServe's storage initializer puts the model."""

PRESET_ENV = {"HOME": "/home", "VLLM_LOGGING_LEVEL": "INFO", "HF_HUB_CACHE": "/models"}
"""The environment the presets give the main container."""

_QUANTITY = re.compile(r"^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$")
_UNITS = {
    None: 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
}  # fmt: skip


def quantity_bytes(value: Any) -> int | None:
    """A Kubernetes quantity (``10Gi``, ``500M``) in bytes, or None."""
    m = _QUANTITY.match(str(value).strip())
    if m is None:
        return None
    return int(float(m.group(1)) * _UNITS[m.group(2)])


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def merge(base: Any, override: Any) -> Any:
    """``override`` over ``base`` as Kubernetes' strategic merge does for the fields an
    ``LLMInferenceServiceSpec`` holds: mappings key by key, lists of named items
    (containers, env, volumes) item by item on ``name``, anything else replaced."""
    if isinstance(base, dict) and isinstance(override, dict):
        out = dict(base)
        for key, value in override.items():
            out[key] = merge(base[key], value) if key in base else value
        return out
    if (
        isinstance(base, list)
        and isinstance(override, list)
        and all(isinstance(i, dict) and "name" in i for i in [*base, *override])
    ):
        merged = {i["name"]: i for i in base}
        for item in override:
            merged[item["name"]] = merge(merged.get(item["name"], {}), item)
        return list(merged.values())
    return override


_ACTION = re.compile(r"\{\{-?\s*(.*?)\s*-?\}\}")
_CHILD = re.compile(r"""^ChildName\s+\.ObjectMeta\.Name\s+[`"]([^`"]*)[`"]$""")


def render(value: Any, name: str, namespace: str, model: str) -> Any:
    """The template actions KServe's controller fills in the merged spec
    (``ReplaceVariables``: Go templates over the service, with ``ChildName`` =
    knative's ``kmeta.ChildName``): ``{{ ChildName .ObjectMeta.Name "-suffix" }}``,
    ``{{ .ObjectMeta.Name }}``, ``{{ .ObjectMeta.Namespace }}``, ``{{ .Spec.Model.Name }}``.
    Other actions stay as written (and are reported as unrendered)."""
    if isinstance(value, dict):
        return {k: render(v, name, namespace, model) for k, v in value.items()}
    if isinstance(value, list):
        return [render(v, name, namespace, model) for v in value]
    if not isinstance(value, str) or "{{" not in value:
        return value

    def one(m: re.Match[str]) -> str:
        action = m.group(1)
        child = _CHILD.match(action)
        if child and len(name + child.group(1)) <= 63:
            return name + child.group(1)
        known = {
            ".ObjectMeta.Name": name,
            ".ObjectMeta.Namespace": namespace,
            ".Spec.Model.Name": model,
        }
        return known.get(action, m.group(0))

    return _ACTION.sub(one, value)


WELL_KNOWN = frozenset(
    "kserve-config-llm-" + suffix
    for suffix in (
        "template", "decode-template", "prefill-template", "worker-data-parallel",
        "decode-worker-data-parallel", "prefill-worker-data-parallel", "scheduler",
        "router-route", "scheduler-latency-predictor", "tokenizer", "tracing",
    )
)  # fmt: skip
"""KServe's well-known presets (``WellKnownDefaultConfigs``,
``pkg/controller/v1alpha2/llmisvc/config_merge.go``): the controller applies the ones a
service needs itself; their vLLM command is the one this module builds, and the others
configure the router, the route and tracing."""


def _resolved_spec(
    res: Resource, spec: dict[str, Any], configs: Mapping[str, Any]
) -> tuple[dict[str, Any], list[tuple[str, int | None]]]:
    """The service's spec over its ``spec.baseRefs`` configs, in order (KServe's
    ``combineBaseRefsConfig``: presets, then each base, then the service), and the bases
    (name, line) that are neither in the input nor a well-known preset: they live in the
    cluster (the service's namespace or KServe's, ``getConfig``), so how vLLM starts is
    only known there."""
    refs = listing(spec.get("baseRefs"))
    merged: Any = {}
    missing: list[tuple[str, int | None]] = []
    for i, ref in enumerate(refs):
        ref_name = ref.get("name") if isinstance(ref, dict) else None
        if not isinstance(ref_name, str) or not ref_name:
            from kvconfig.errors import InputError

            raise InputError(
                f"spec.baseRefs[{i}]: expected a mapping with a name, got {ref!r}",
                source=res.source,
                line=res.line("spec", "baseRefs", i),
                key="spec.baseRefs",
                hint="write baseRefs: [{name: CONFIG}]",
            )
        if isinstance(configs.get(ref_name), dict):
            merged = merge(merged, configs[ref_name])
        elif ref_name not in WELL_KNOWN:
            missing.append((ref_name, res.line("spec", "baseRefs", i)))
    return (merge(merged, spec) if refs else spec), missing


def _unknown_bases(engine: Engine, missing: list[tuple[str, int | None]]) -> Engine:
    """The engine with a note per base config only the cluster holds (``unknown-base``):
    its plan cannot be told (KV403), never guessed from the service alone."""
    from kvconfig.load.operator_engine import Note

    notes = tuple(
        Note(
            "unknown-base",
            f"spec.baseRefs names {name}, an LLMInferenceServiceConfig that is not in the "
            "input: KServe merges the service over it in the cluster, so how vLLM starts "
            "is only known there",
            line,
            name,
        )
        for name, line in missing
    )
    return replace(engine, notes=(*engine.notes, *notes))


def engines(
    res: Resource,
    base: Path,
    found: list[Found],
    block_lines: frozenset[int],
    configs: Mapping[str, Any] | None = None,
) -> list[Engine]:
    """The engines of an ``LLMInferenceService``: the main workload and ``spec.prefill``."""
    data = res.data
    meta = mapping(data.get("metadata"))
    name = str(meta.get("name", "unnamed"))
    namespace = str(meta.get("namespace", "default"))
    spec, missing = _resolved_spec(res, mapping(data.get("spec")), configs or {})
    model_name = mapping(spec.get("model")).get("name")
    spec = render(spec, name, namespace, str(model_name or name))
    model = mapping(spec.get("model"))
    served = str(model.get("name") or name)
    uri = model.get("uri") if isinstance(model.get("uri"), str) else None
    prefill = spec.get("prefill") if isinstance(spec.get("prefill"), dict) else None
    speculator = speculative_arg(res, spec)
    out: list[Engine] = []
    roles: list[tuple[str | None, dict[str, Any], tuple[str, ...]]] = [
        ("decode" if prefill else None, spec, ("spec",))
    ]
    if prefill is not None:
        roles.append(("prefill", prefill, ("spec", "prefill")))
    for role, workload, path in roles:
        words = [MODEL_DIR, "--served-model-name", served]
        if role != "prefill":
            words.append(f"publishers/{namespace}/models/{served}")
        port = "8001" if role == "decode" or workload.get("worker") else "8000"
        words += ["--port", port]
        kv = spec.get("kvCacheOffloading") or mapping(spec.get("workload")).get("kvCacheOffloading")
        if isinstance(kv, dict) and quantity_bytes(kv.get("cpu")) is not None:
            extra = {
                "spec_name": "TieringOffloadingSpec",
                "cpu_bytes_to_use": quantity_bytes(kv["cpu"]),
            }
            if kv.get("evictionPolicy"):
                extra["eviction_policy"] = kv["evictionPolicy"]
            words += [
                "--kv-transfer-config",
                json.dumps(
                    {"kv_connector": "OffloadingConnector", "kv_role": "kv_both",
                     "kv_connector_extra_config": extra},
                    separators=(",", ":"),
                ),
            ]  # fmt: skip
        par = mapping(workload.get("parallelism"))
        parallelism: dict[str, int] = {}
        for field, flag in (("tensor", "--tensor-parallel-size"),):
            value = _int(par.get(field))
            if value:
                words += [flag, str(value)]
                parallelism[field] = value
        if workload.get("worker"):
            if par.get("expert"):
                words.append("--enable-expert-parallel")
            words += ["--data-parallel-size", str(_int(par.get("data")) or 1)]
            words += ["--data-parallel-size-local", str(_int(par.get("dataLocal")) or 1)]
        for field in ("data", "dataLocal", "pipeline"):
            value = _int(par.get(field))
            if value:
                parallelism["data_local" if field == "dataLocal" else field] = value
        if isinstance(workload.get("replicas"), int):
            parallelism["replicas"] = workload["replicas"]
        # the controller gives spec.speculator to the decode workloads only
        # (attachSpeculatorModelArtifacts, pkg/controller/v1alpha2/llmisvc)
        spec_arg = speculator if role != "prefill" else None
        out.extend(
            _main_container(
                res, base, found, block_lines, workload, path, words, role, parallelism, name,
                uri, spec_arg,
            )
        )  # fmt: skip
    return [_unknown_bases(e, missing) for e in out] if missing else out


def _main_container(  # noqa: PLR0917 (one call site, many facts)
    res: Resource,
    base: Path,
    found: list[Found],
    block_lines: frozenset[int],
    workload: dict[str, Any],
    path: tuple[str, ...],
    preset: list[str],
    role: str | None,
    parallelism: dict[str, int],
    name: str,
    uri: str | None,
    speculator: tuple[str, str | None] | None = None,
) -> list[Engine]:
    from kvconfig.load.kubernetes.containers import read_container
    from kvconfig.load.kubernetes.env import container_env
    from kvconfig.load.kubernetes.resources import Pod

    template = mapping(workload.get("template"))
    containers = listing(template.get("containers"))
    index = next(
        (i for i, c in enumerate(containers) if isinstance(c, dict) and c.get("name") == "main"),
        None,
    )
    label = f"LLMInferenceService/{name}" + ("/prefill" if role == "prefill" else "")
    tpath = (*path, "template")
    container: dict[str, Any] = dict(containers[index]) if index is not None else {"name": "main"}
    spec_line = None
    if speculator is not None:
        env_path: tuple[str | int, ...] = (*tpath, "containers", index or 0, "env")
        container = with_speculator(res, container, speculator[0], env_path)
        spec_line = res.line("spec", "speculator")
    draft_uri = speculator[1] if speculator is not None else None
    if index is not None and container.get("command"):
        from kvconfig.load.dynamo import _Shim as _View

        view = _View(
            res, tpath, {**template, "containers": [container]},
            (*tpath, "containers", index),
        )  # fmt: skip
        pod = Pod(view, (), label, role=role, parallelism=parallelism, block_lines=block_lines)  # type: ignore[arg-type]
        return [
            replace(e, model_uri=uri, speculator_uri=draft_uri)
            for e in read_container(pod, 0, base, found)
        ]
    pod_spec = {**template, "containers": [container]}
    env_line = res.line(*tpath, "containers", index or 0)
    for k, item in enumerate(listing(container.get("env"))):
        if isinstance(item, dict) and item.get("name") == "VLLM_ADDITIONAL_ARGS":
            env_line = res.line(*tpath, "containers", index or 0, "env", k) or spec_line or env_line
    env = container_env(container, res, (*tpath, "containers", index or 0), label)
    extra_words, extra_unknown = _additional_args(env, res.source, env_line, label)
    args = strings(container.get("args"), res, (*tpath, "containers", index or 0, "args"), label)
    container["args"] = [*preset, *extra_words, *args]
    arg_unknown = [(2 + len(preset) + i, what) for i, what in extra_unknown]
    container["command"] = ["vllm", "serve"]
    from kvconfig.load.dynamo import _Shim

    container_at: tuple[str | int, ...] = (
        (*tpath, "containers", index) if index is not None else path
    )
    shim = _Shim(res, tpath, pod_spec, container_at)
    pod = Pod(shim, (), label, role=role, parallelism=parallelism, block_lines=block_lines)  # type: ignore[arg-type]
    out = []
    for engine in read_container(
        pod, 0, base, found, entry_label="kserve", env_base=PRESET_ENV, arg_unknown=arg_unknown
    ):
        unknown = tuple(n for n in engine.env_unknown if n != "VLLM_ADDITIONAL_ARGS")
        notes = engine.notes
        if "VLLM_ADDITIONAL_ARGS" in engine.env_unknown:
            from kvconfig.load.operator_engine import Note

            notes = (
                *notes,
                Note(
                    "unknown-value",
                    "VLLM_ADDITIONAL_ARGS comes from a Secret or ConfigMap: its vLLM "
                    "arguments are only known at run time",
                    env_line,
                    "VLLM_ADDITIONAL_ARGS",
                ),
            )
        out.append(
            replace(
                engine, model_uri=uri, speculator_uri=draft_uri, env_unknown=unknown, notes=notes
            )
        )
    return out


_PRESET_EVAL = 'eval "exec vllm serve ${VLLM_ADDITIONAL_ARGS}"'
"""How the presets' ``bash -c`` script uses the variable (``eval "exec vllm serve ...
${VLLM_ADDITIONAL_ARGS} $@"``): expanded, then read again as shell text."""


def _additional_args(
    env: Any, source: str, line: int | None, label: str
) -> tuple[list[str], list[tuple[int, str]]]:
    """The words ``VLLM_ADDITIONAL_ARGS`` gives vLLM, and (index, what) of those only
    known at run time (``$(...)``, a variable from a Secret)."""
    from kvconfig.load.shell.script import read_script

    additional = env.known.get("VLLM_ADDITIONAL_ARGS", "")
    if not additional:
        return [], []
    reading = read_script(
        _PRESET_EVAL,
        {**PRESET_ENV, **env.shell_env()},
        unknown_rest=bool(env.sources),
        source=source,
        line=line,
        key=f"{label}: VLLM_ADDITIONAL_ARGS",
        dialect="bash",
    )
    if reading.unparsed:  # bash's eval fails: the container's script starts no server
        raise reading.unparsed[0]
    runs = [c for c in reading.commands if c.words[:2] == ("vllm", "serve")]
    if not runs or reading.blind:
        return [additional], [(0, additional)]
    cmd = runs[0]
    return list(cmd.words[2:]), [(i - 2, what) for i, what in cmd.unknown if i >= 2]
