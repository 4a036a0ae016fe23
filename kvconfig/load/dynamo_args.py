"""How ``python -m dynamo.vllm`` splits its command line: its own options, the words it
hands to vLLM's engine argument parser, and the defaults it sets after parsing
(NVIDIA Dynamo's ``components/src/dynamo/vllm/args.py``; ``kvconfig.load.dynamo`` reads
the ``DynamoGraphDeployment`` resources that run it).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kvconfig.errors import InputError
from kvconfig.load.operator_engine import Note
from kvconfig.mirror import versions

#: Dynamo's own options (runtime and vLLM wrapper groups) and how many words each takes:
#: 0 (flag; ``--no-`` forms included), 1, "?" (optional value) or "*" (any number).
#: From ai-dynamo/dynamo ``components/src/dynamo/common/configuration/groups/runtime_args.py``
#: and ``components/src/dynamo/vllm/backend_args.py``.
DYNAMO_OPTIONS: dict[str, int | str] = {
    **{f"--{n}": 1 for n in (
        "namespace", "endpoint", "kv-state-endpoint", "discovery-backend", "request-plane",
        "response-plane", "event-plane", "dyn-tool-call-parser", "dyn-reasoning-parser",
        "dyn-default-thinking-mode", "dyn-structural-tag-scope", "dyn-structural-tag-schema",
        "custom-jinja-template", "endpoint-types", "dyn-endpoint-types", "dump-config-to",
        "multimodal-embedding-cache-capacity-gb", "media-output-fs-url",
        "media-output-http-url", "health-check-payload", "engine-request-limit",
        "tcp-tls-cert-path", "tcp-tls-key-path", "tcp-tls-ca-cert-path", "tcp-tls-server-name",
        "tcp-tls-handshake-timeout", "tcp-tls-client-cert-path", "tcp-tls-client-key-path",
        "tcp-tls-client-ca-cert-path", "nats-tls-ca-cert-path", "nats-tls-client-cert-path",
        "nats-tls-client-key-path", "disaggregation-mode", "mm-prompt-template",
        "custom-encoder-class", "embedding-transfer-mode", "model-express-url",
        "benchmark-mode", "prefill-max-new-token-samples", "prefill-max-kv-read-token-samples",
        "decode-max-kv-read-token-samples", "decode-max-batch-size-samples",
        "prefix-max-batch-size-samples", "benchmark-prefill-granularity",
        "benchmark-prefill-kv-read-granularity", "benchmark-prefill-batch-granularity",
        "benchmark-decode-length-granularity", "benchmark-decode-batch-granularity",
        "benchmark-warmup-iterations", "benchmark-output-path", "benchmark-timeout",
        "sleep-mode-level", "stage-configs-path",
    )},
    **{f"--{p}{n}": 0 for n in (
        "fpm-trace", "exclude-tools-when-tool-choice-none", "dyn-enable-structural-tag",
        "multimodal-embedding-cache-publisher", "tcp-tls-insecure", "nats-tls-insecure",
        "is-prefill-worker", "is-decode-worker", "use-vllm-tokenizer", "route-to-encoder",
        "multimodal-encode-worker", "multimodal-worker", "multimodal-decode-worker",
        "enable-multimodal", "enable-rl", "frontend-decoding", "embedding-worker", "headless",
        "gms-shadow-mode", "omni",
    ) for p in ("", "no-")},
    "--dyn-structural-tag": "?",
    "--connector": "*",
    "--output-modalities": "*",
}  # fmt: skip

#: What ``dynamo.vllm`` sets when vLLM's arguments leave it unset (``args.py``:
#: ``update_engine_config_with_dynamo``), by destination.
DYNAMO_DEFAULTS: dict[str, Any] = {"block-size": "16", "enable-prefix-caching": True}


@dataclass
class Split:
    """The words ``dynamo.vllm`` passes to vLLM, and what its own options say."""

    argv: list[str]
    role: str | None = None
    notes: list[Note] = field(default_factory=list)
    defaults: dict[str, Any] = field(default_factory=dict)


_CONNECTORS: dict[str, dict[str, str]] = {
    "lmcache": {"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both"},
    "nixl": {"kv_connector": "NixlConnector", "kv_role": "kv_both"},
    "kvbm": {
        "kv_connector": "DynamoConnector",
        "kv_connector_module_path": "kvbm.vllm_integration.connector",
        "kv_role": "kv_both",
    },
}
"""What each ``--connector`` word becomes (``create_kv_transfer_config`` in
``components/src/dynamo/vllm/args.py`` of the Dynamo releases that take ``--connector``)."""


def connector_config(connectors: Sequence[str]) -> dict[str, Any] | None:
    """The kv-transfer config ``dynamo.vllm`` builds from ``--connector`` words: None for
    none (or ``none``/``null``), one connector's config as it is, several chained in a
    ``PdConnector`` (kvbm's module) in the order given."""
    chosen = [dict(_CONNECTORS[c]) for c in connectors if c in _CONNECTORS]
    if not chosen:
        return None
    if len(chosen) == 1:
        return chosen[0]
    return {
        "kv_connector": "PdConnector",
        "kv_role": "kv_both",
        "kv_connector_extra_config": {"connectors": chosen},
        "kv_connector_module_path": "kvbm.vllm_integration.connector",
    }


def split_args(words: Sequence[str], line: int | None = None, source: str = "") -> Split:
    """``python -m dynamo.vllm WORDS``: vLLM's words, Dynamo's role, and its defaults."""
    from kvconfig.load.argv_table import options

    vllm = options(versions.DEFAULT)
    out: list[str] = []
    role: str | None = None
    notes: list[Note] = []
    connectors: list[str] = []
    i = 0
    while i < len(words):
        w = words[i]
        i += 1
        name, eq, inline = w.partition("=")
        arity = DYNAMO_OPTIONS.get(name) if name.startswith("--") else None
        if arity is None:
            out.append(w)
            continue
        values: list[str] = [inline] if eq else []
        if not eq and arity in (1, "?") and i < len(words) and not words[i].startswith("-"):
            values.append(words[i])
            i += 1
        elif not eq and arity == "*":
            while i < len(words) and not words[i].startswith("-"):
                values.append(words[i])
                i += 1
        if name == "--connector":
            connectors = [v.lower() for v in values]
        if name == "--disaggregation-mode" and values and values[0] in ("prefill", "decode"):
            role = values[0]
        elif name == "--is-prefill-worker":
            role = "prefill"
        elif name == "--is-decode-worker":
            role = "decode"
        if name in vllm:
            notes.append(
                Note(
                    "not-read",
                    f"{name} is an option of dynamo.vllm itself: vLLM does not see it",
                    line,
                    name,
                )
            )
    config = connector_config(connectors)
    if config is not None:
        if any(w.split("=", 1)[0] in ("--kv-transfer-config", "--kv_transfer_config") for w in out):
            raise InputError(
                "dynamo.vllm refuses both --kv-transfer-config and --connector",
                source=source,
                line=line,
                key="--connector",
                hint="keep one of them",
            )
        out += ["--kv-transfer-config", json.dumps(config, separators=(",", ":"))]
        notes.append(
            Note(
                "launcher-default",
                f"dynamo.vllm turns --connector {' '.join(connectors)} into the kv-transfer "
                f"config {config['kv_connector']}",
                line,
                "--connector",
            )
        )
    defaults = dict(DYNAMO_DEFAULTS)
    notes.append(
        Note(
            "launcher-default",
            "dynamo.vllm sets block size 16 and turns prefix caching on when vLLM's "
            "arguments leave them unset",
            line,
            "dynamo.vllm",
        )
    )
    return Split(out, role, notes, defaults)
