"""NVIDIA Dynamo 0.x SDK service configs: the YAML file ``dynamo serve GRAPH -f FILE``
reads (Dynamo 0.1 to 0.3, 2025; ``deploy/sdk``), one section per service of the graph.

``kvconfig.load.documents.kind_of`` knows the file by its sections: mappings named for
the SDK's services (``Common``, ``Frontend``, ``VllmWorker`` ...), one of them with the
SDK's own ``ServiceArgs`` or ``common-configs``. What the runtime does with it:

* ``ServiceConfig.as_args(SERVICE)`` (``dynamo/sdk/lib/config.py``) turns a section into
  command-line words: first each ``Common`` key the section's ``common-configs`` lists and
  does not set itself, then each of its own keys but ``ServiceArgs`` and
  ``common-configs``, in order: ``--KEY`` for true; nothing for false, but
  ``--no-enable-prefix-caching`` (and the two other flags vLLM defaults to true) for
  theirs; ``--KEY JSON`` for a mapping; ``--KEY str(VALUE)`` for anything else.
* The vLLM workers (``VllmWorker`` and ``PrefillWorker`` of ``examples/llm`` and
  ``examples/vllm_v0``; ``VllmPrefillWorker`` and ``VllmDecodeWorker`` of
  ``examples/vllm_v1`` and ``examples/multimodal``) parse those words with
  ``parse_vllm_args`` (``utils/vllm.py``, ``utils/args.py``): vLLM's engine arguments
  (``--model`` an option) and Dynamo's own (``_DYNAMO_OPTIONS``), which never reach vLLM.
  ``VllmWorker`` with ``--remote-prefill`` sends prefills to the ``PrefillWorker``s: it is
  the decode role. ``ServiceArgs.workers`` is how many copies of a service run (1, the
  ``@service`` default, when unset).
* The KV-aware ``Router`` (``components/kv_router.py``) hashes the workers' KV events in
  blocks of its ``--block-size`` (its section's or, through ``common-configs``, the
  Common one), 64 when unset (``routers``).

A worker runs the vLLM its Dynamo release pins, patched by Dynamo: 0.7.2 in Dynamo 0.1,
``ai-dynamo-vllm~=0.8.4`` in the last SDK release, 0.3.1 (its ``pyproject.toml`` and
``container/Dockerfile.vllm``). The file names no release, so the words are read as
written for vLLM 0.8.4 (``VLLM``): an option or value the newest table refuses is left out
with a note rather than refused (the patched ``KVTransferConfig`` takes a
``DynamoNixlConnector`` without ``kv_role``: ``container/deps/vllm/
vllm_v0.8.4-dynamo-kv-disagg-patch.patch``), and the plan assumes the nearest release
kvconfig knows (KV502). ``dynamo deploy`` puts the config in a ``DynamoGraphDeployment``'s
``DYN_DEPLOYMENT_CONFIG`` (``deployed``, ``kvconfig.load.dynamo``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from kvconfig.errors import InputError, NoEngine, describe
from kvconfig.load import yamlfile as _yaml
from kvconfig.load.documents import is_sdk_config
from kvconfig.load.engine_fields import check_words
from kvconfig.load.operator_engine import Engine
from kvconfig.load.router_rules import Router, sized

WORKERS: Mapping[str, str | None] = {
    "VllmWorker": None,  # decode with --remote-prefill, else aggregated
    "PrefillWorker": "prefill",
    "VllmPrefillWorker": "prefill",
    "VllmDecodeWorker": "decode",
}
"""The SDK services that run a vLLM engine, with their role."""

_DYNAMO_OPTIONS = frozenset({
    "router", "router-num-threads", "remote-prefill", "conditional-disagg",
    "max-local-prefill-length", "max-prefill-queue-size", "enable-disagg",
    "image-token-id", "num-patches", "prompt-template",
})  # fmt: skip
"""The options ``parse_vllm_args`` adds to vLLM's in one SDK release or another."""

_TRUE_DEFAULTS = {
    "enable_prefix_caching": "no-enable-prefix-caching",
    "use_tqdm_on_load": "no-use-tqdm-on-load",
    "multi_step_stream_outputs": "no-multi-step-stream-outputs",
}
"""Flags vLLM defaults to true: ``as_args`` gives false as their negative."""

VLLM = "0.8.4"
"""The vLLM of the last SDK release (Dynamo 0.3.1: ``ai-dynamo-vllm~=0.8.4``)."""

ROUTER_BLOCK_SIZE = 64
"""``kv_router.py``'s ``--block-size`` default."""


def _args(
    doc: _yaml.Document, service: str, only: str | None = None
) -> Iterator[tuple[str, list[str]]]:
    """(key, its words) for each key ``ServiceConfig.as_args(service)`` turns into the
    words the service's parser gets, in its order; with ``only``, that option's alone
    (the others' values are not written out)."""
    section = doc.data.get(service) or {}
    own = {k: v for k, v in section.items() if k != "ServiceArgs"}
    common = doc.data.get("Common")
    subscribed = own.get("common-configs")
    if isinstance(common, dict) and subscribed is not None:
        if not isinstance(subscribed, (list, str, dict)) or any(
            isinstance(key, (list, dict)) for key in subscribed
        ):
            raise InputError(
                f"{service}.common-configs: expected a list of Common keys, got "
                f"{describe(subscribed)} (Dynamo's ServiceConfig fails on it)",
                source=doc.source,
                line=doc.line(service, "common-configs"),
                key=f"{service}.common-configs",
                hint="e.g. common-configs: [model, block-size]",
            )
        for key in subscribed:
            if key in common and key not in own and _wanted(str(key), only):
                yield from _words(str(key), common[key])
    for key, value in own.items():
        if _wanted(str(key), only):
            yield from _words(str(key), value)


def _wanted(key: str, only: str | None) -> bool:
    return only is None or key.replace("_", "-") == only


def _words(key: str, value: Any) -> Iterator[tuple[str, list[str]]]:
    if key.endswith("common-configs"):
        return
    if isinstance(value, bool):
        if value:
            yield key, [f"--{key}"]
        elif (negative := _TRUE_DEFAULTS.get(key.replace("-", "_"))) is not None:
            yield key, [f"--{negative}"]
        return
    if isinstance(value, dict):
        yield key, [f"--{key}", json.dumps(value)]
        return
    yield key, [f"--{key}", _python_str(value)]


def _python_str(value: Any) -> str:
    """Python's ``str`` of a YAML value (``None``, ``[1, 2]``, ``0.9``)."""
    if isinstance(value, list):
        return "[" + ", ".join(repr(v) if isinstance(v, str) else _python_str(v)
                               for v in value) + "]"  # fmt: skip
    return "None" if value is None else str(value)


def engines(doc: _yaml.Document, base: Path) -> list[Engine]:
    """One engine per vLLM worker service of the config."""
    out = [worker(doc, service, base) for service in WORKERS if service in doc.data]
    if not out:
        raise NoEngine(
            "no vLLM worker: the Dynamo SDK config has no VllmWorker, PrefillWorker, "
            "VllmPrefillWorker or VllmDecodeWorker section",
            source=doc.source,
            line=1,
            hint="lint the config of a graph whose workers run vLLM",
        )
    return out


def worker(
    doc: _yaml.Document, service: str, base: Path, name: str = "", line: int | None = None
) -> Engine:
    """The engine of the vLLM worker ``service`` (a key of ``WORKERS``), named ``name``
    (default: the service) at ``line`` (default: its section's)."""
    pairs = list(_args(doc, service))
    argv = [w for k, words in pairs if k.replace("_", "-") not in _DYNAMO_OPTIONS
            for w in words]  # fmt: skip
    line = line if line is not None else doc.line(service)
    check_words(argv, doc.source, line, name or service)
    remote = [words for k, words in pairs if k.replace("_", "-") == "remote-prefill"]
    named = WORKERS[service]
    role = "decode" if named is None and remote and remote[-1] else named  # prefills sent
    return Engine(
        name=name or service,
        source=doc.source,
        line=line,
        argv=tuple(argv),
        entry="dynamo serve",
        parser="api_server",
        role=role,
        parallelism=_replicas(doc, service),
        vllm_version=VLLM,
        base=str(base),
    )


def deployed(
    config: str, service: str, source: str, base: Path, *, name: str, line: int | None
) -> Engine | None:
    """The engine of the service ``service`` of a ``DynamoGraphDeployment`` that
    ``dynamo deploy`` made: its pods run ``dynamo serve GRAPH --service-name SERVICE`` with
    the SDK config as JSON in ``DYN_DEPLOYMENT_CONFIG``, which ``resolve_service_config``
    (``dynamo/sdk/cli/utils.py``) takes instead of any ``-f`` file. None when the service
    is no vLLM worker of that config; bad input when the config is no SDK config."""
    if service not in WORKERS:
        return None
    try:
        doc = _yaml.parse(config, source, last_wins=True)  # PyYAML's safe_load: last wins
    except InputError as err:
        raise InputError(
            f"DYN_DEPLOYMENT_CONFIG: {err.message}",
            source=source,
            line=line,
            key="DYN_DEPLOYMENT_CONFIG",
            hint="give the JSON dynamo deploy writes",
        ) from None
    if not isinstance(doc.data, dict) or not is_sdk_config(doc.data):
        raise InputError(
            "DYN_DEPLOYMENT_CONFIG is no Dynamo SDK service config (a mapping of service sections)",
            source=source,
            line=line,
            key="DYN_DEPLOYMENT_CONFIG",
            hint='give the JSON dynamo deploy writes: {"Common": {...}, "VllmWorker": {...}}',
        )
    if service not in doc.data:
        return None
    located = _yaml.Document(source, doc.data, {})
    return worker(located, service, base, name, line)


def _replicas(doc: _yaml.Document, service: str) -> dict[str, int]:
    """``{"replicas": ServiceArgs.workers}`` (1 when unset); empty when it is no count."""
    args = (doc.data.get(service) or {}).get("ServiceArgs")
    workers = args.get("workers", 1) if isinstance(args, dict) else 1
    if isinstance(workers, bool) or not isinstance(workers, (int, str)):
        return {}
    text = str(workers).strip()
    return {"replicas": int(text)} if text.isdigit() else {}


def routers(data: Mapping[str, Any]) -> list[Router]:
    """The KV-aware ``Router`` service, in blocks of its ``--block-size``."""
    if not isinstance(data.get("Router"), dict):
        return []
    doc = _yaml.Document("", data, {})
    size: Any = None
    for _key, words in _args(doc, "Router", "block-size"):
        if len(words) == 2:
            size = words[1]  # argparse keeps the last
    return [sized("dynamo", "Router", size, ROUTER_BLOCK_SIZE)]
