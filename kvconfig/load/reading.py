"""What kvconfig read of one engine of an operator file: the facts an operator checks at a
glance (model, parallel sizes, block size, speculative method, KV connector, role, vLLM
release), taken from the arguments vLLM's parser receives.

``reading_of`` is the one place that turns an ``Engine`` into these facts; the reports
(text and JSON) and the real-file corpus test (``tests/realworld``) both ask it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kvconfig.errors import InputError
from kvconfig.load import jsontext
from kvconfig.load.argv_once import parse_once
from kvconfig.load.operator_engine import Engine


@dataclass(frozen=True, slots=True)
class Reading:
    """What one engine runs with, as read from its file."""

    name: str
    """The engine's name in the file (``Deployment/qwen3-decode/vllm``)."""
    role: str | None
    """``prefill``, ``decode`` or None (aggregated, or the file does not say)."""
    replicas: int | None
    """How many copies of the engine the resource runs, when it says."""
    model: str | None
    """The model vLLM serves, as its parser stores it (an id or a path)."""
    model_uri: str | None
    """Where the platform fetches the model from, when the argument is a local mount."""
    tensor: int
    """``--tensor-parallel-size`` (1 when unset)."""
    pipeline: int
    """``--pipeline-parallel-size`` (1 when unset)."""
    data: int
    """``--data-parallel-size`` (1 when unset)."""
    expert: bool
    """``--enable-expert-parallel``."""
    block_size: int | None
    """``--block-size``, or the launcher's default; None: vLLM picks it."""
    speculative: str | None
    """The speculative method (``eagle3``, ``mtp``, ``ngram``...; a draft model without a
    method: the one its name gives), None without speculative decoding."""
    connector: str | None
    """``kv_connector`` of ``--kv-transfer-config`` (``MultiConnector(A,B)`` lists the
    connectors a MultiConnector or Dynamo's PdConnector chains)."""
    kv_role: str | None
    """``kv_role`` of ``--kv-transfer-config``."""
    vllm_version: str | None
    """The vLLM release the image tag or a pinned install names."""
    unreadable: str | None = None
    """Why the arguments could not be read (vLLM would refuse them), or None."""
    run_time: dict[str, str] = field(default_factory=dict)
    """Options whose value is only known at run time, with the word that holds it
    (``{"tensor-parallel-size": "$(TP)"}``); their fields above keep the default."""

    def to_json(self) -> dict[str, Any]:
        """The reading as JSON (docs/json.md)."""
        return {name: getattr(self, name) for name in self.__dataclass_fields__}

    def summary(self) -> str:
        """One line for the text report: ``Qwen/Qwen3-8B tp=2 block=64 NixlConnector
        (kv_producer) prefill``."""
        parts = [self.model or "model ?"]
        r = self.run_time
        sizes = [
            ("tp", r.get("tensor-parallel-size", self.tensor)),
            ("pp", r.get("pipeline-parallel-size", self.pipeline)),
            ("dp", r.get("data-parallel-size", self.data)),
        ]
        parts += [f"{k}={v}" for k, v in sizes if v != 1 or k == "tp"]
        if self.expert:
            parts.append("ep")
        block = r.get("block-size", self.block_size)
        parts.append(f"block={block}" if block else "block=vLLM default")
        if "speculative-config" in r:
            parts.append(f"spec={r['speculative-config']}")
        elif self.speculative:
            parts.append(f"spec={self.speculative}")
        if "kv-transfer-config" in r:
            parts.append(f"connector={r['kv-transfer-config']}")
        elif self.connector:
            parts.append(self.connector + (f" ({self.kv_role})" if self.kv_role else ""))
        if self.role:
            parts.append(self.role)
        if "replicas" in r:
            parts.append("x? (run time)")
        elif self.replicas is not None and self.replicas != 1:
            parts.append(f"x{self.replicas}")
        if self.vllm_version:
            parts.append(f"vLLM {self.vllm_version}")
        if "spec.baseRefs" in r:
            parts.append(f"over {r['spec.baseRefs']} (not in the input)")
        return " ".join(parts)


def _json(value: Any) -> dict[str, Any] | None:
    if isinstance(value, dict):
        return value
    if not isinstance(value, str):
        return None
    try:
        data = json.loads(value)
    except ValueError:
        pair = jsontext.with_stand_ins(value)  # "port": $PORT: what holds whatever it is
        data = None if pair is None else jsontext.agreed(*pair)
    return data if isinstance(data, dict) else None


def _int(value: Any, default: int | None) -> int | None:
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return default


def _connector(config: Mapping[str, Any] | None) -> tuple[str | None, str | None]:
    if not config:
        return None, None
    name = config.get("kv_connector")
    role = config.get("kv_role")
    if not isinstance(name, str):
        return None, role if isinstance(role, str) else None
    if name in ("MultiConnector", "PdConnector"):
        extra = config.get("kv_connector_extra_config")
        inner = extra.get("connectors") if isinstance(extra, dict) else None
        names = [
            c["kv_connector"]
            for c in (inner if isinstance(inner, list) else [])
            if isinstance(c, dict) and isinstance(c.get("kv_connector"), str)
        ]
        if names:
            name = f"{name}({','.join(names)})"
    return name, role if isinstance(role, str) else None


def _speculative(config: Mapping[str, Any] | None, version: str) -> str | None:
    """The method as vLLM stores it (``SpeculativeConfig.__post_init__``): a ``*_mtp``
    model-type name is ``mtp`` (``kvconfig.mirror.speculative.canonical``), and a draft
    model without a method, or with ``draft_model``, takes the method its name gives."""
    if not config:
        return None
    from kvconfig.mirror.speculative import canonical, named_by_model

    method, model = config.get("method"), config.get("model")
    if method in (None, "", "draft_model") and isinstance(model, str) and model:
        return named_by_model(model)
    if isinstance(method, str) and method:
        from kvconfig.mirror import versions

        return canonical(method, versions.facts(version).mtp_methods)
    return None


def _bases(engine: Engine) -> dict[str, str]:
    """``{"spec.baseRefs": NAMES}`` for base configurations only the cluster holds, and
    ``{"replicas": WHY}`` for a command a script's loop runs a run-time number of times."""
    names = [n.key for n in engine.notes if n.kind == "unknown-base"]
    rounds = [n.key for n in engine.notes if n.kind == "run-time-rounds"]
    return ({"spec.baseRefs": ", ".join(names)} if names else {}) | (
        {"replicas": rounds[0]} if rounds else {}
    )


#: The options a reading shows.
_SHOWN = ("model", "tensor-parallel-size", "pipeline-parallel-size", "data-parallel-size",
          "block-size", "speculative-config", "kv-transfer-config")  # fmt: skip


PARSERS = ("api_server", "demo_api_server", "vllm-rs")
"""The ``parse_serve_args`` entries an engine's ``parser`` names, but ``serve``."""


def reading_of(engine: Engine) -> Reading:
    """What ``engine`` runs with, read by vLLM's parser rules (``kvconfig.load.argv``)."""
    from kvconfig.load.engine_options import engine_version, run_time_words, written_for

    version = engine_version(engine, None)[0]
    entry = engine.parser if engine.parser in PARSERS else "serve"
    values: Mapping[str, Any] = {}
    model: str | None = None
    unreadable: str | None = None
    try:
        args = parse_once(engine.argv, version, entry, engine.source, written_for(engine))
        values, model = args.values, args.model
    except InputError as exc:
        unreadable = str(exc)
    from kvconfig.mirror.connectors.registry import effective_kv_transfer

    kv = _json(values.get("kv-transfer-config"))
    connector, kv_role = _connector(effective_kv_transfer(kv, values, engine.env))
    block = _int(values.get("block-size"), None)
    if block is None:
        block = _int(engine.defaults.get("block-size"), None)
    replicas = engine.parallelism.get("replicas")
    return Reading(
        name=engine.name,
        role=engine.role,
        replicas=replicas,
        model=model,
        model_uri=engine.model_uri,
        tensor=_int(values.get("tensor-parallel-size"), 1) or 1,
        pipeline=_int(values.get("pipeline-parallel-size"), 1) or 1,
        data=_int(values.get("data-parallel-size"), 1) or 1,
        expert=values.get("enable-expert-parallel") is True,
        block_size=block,
        speculative=_speculative(_json(values.get("speculative-config")), version),
        connector=connector,
        kv_role=kv_role,
        vllm_version=engine.vllm_version,
        unreadable=unreadable,
        run_time={**_bases(engine), **{o: w for o, w, _ in run_time_words(engine, values, _SHOWN)}},
    )
