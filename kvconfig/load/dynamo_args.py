"""How ``python -m dynamo.vllm`` splits its command line: its own options, the words it
hands to vLLM's engine argument parser, and the defaults it sets after parsing
(NVIDIA Dynamo's ``components/src/dynamo/vllm/args.py``; ``kvconfig.load.dynamo`` reads
the ``DynamoGraphDeployment`` resources that run it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kvconfig.errors import InputError
from kvconfig.load.operator_engine import Note
from kvconfig.mirror import versions

#: Dynamo's own options (runtime and vLLM wrapper groups) and how many words each takes:
#: 0 (flag; ``--no-`` forms included), 1, "?" (optional value) or "*" (any number).
#: From ai-dynamo/dynamo ``components/src/dynamo/common/configuration/groups/runtime_args.py``
#: and ``components/src/dynamo/vllm/backend_args.py``, every stored version (a flag one
#: release removed stays, as the scripts written for it pass it).
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
        "sleep-mode-level", "stage-configs-path", "embedding-worker-processes",
        "benchmark-points-file", "video-output-dir", "default-video-fps",
        "layerwise-num-gpu-layers", "boundary-ratio", "flow-shift", "diffusion-cache-backend",
        "diffusion-cache-config", "ulysses-degree", "ring-degree", "cfg-parallel-size",
    )},
    **{f"--{p}{n}": 0 for n in (
        "fpm-trace", "exclude-tools-when-tool-choice-none", "dyn-enable-structural-tag",
        "multimodal-embedding-cache-publisher", "tcp-tls-insecure", "nats-tls-insecure",
        "is-prefill-worker", "is-decode-worker", "use-vllm-tokenizer", "route-to-encoder",
        "multimodal-encode-worker", "multimodal-worker", "multimodal-decode-worker",
        "enable-multimodal", "enable-rl", "frontend-decoding", "embedding-worker", "headless",
        "gms-shadow-mode", "omni", "classify-worker", "transcription-worker", "realtime",
        "embedding-frontend-tokenization", "enable-layerwise-offload", "vae-use-slicing",
        "vae-use-tiling", "enable-cache-dit-summary", "enable-cpu-offload",
    ) for p in ("", "no-")},
    "--dyn-structural-tag": "?",
    "--connector": "*",
    "--output-modalities": "*",
}  # fmt: skip

#: What ``dynamo.vllm`` sets when vLLM's arguments leave it unset (``args.py``:
#: ``update_engine_config_with_dynamo``), by destination.
DYNAMO_DEFAULTS: dict[str, Any] = {"block-size": "16", "enable-prefix-caching": True}

BLOCK_SIZE_LEFT_TO_VLLM = (1, 1, 0)
"""The first Dynamo release whose ``dynamo.vllm`` leaves the block size to vLLM. Earlier
launchers set ``block_size = 16`` after parsing when vLLM's arguments left it unset
(``components/backends/vllm/src/dynamo/vllm/args.py``, later
``components/src/dynamo/vllm/args.py``: "Setting reasonable default of 16"); ai-dynamo/dynamo
PR #7690 (merged 2026-03-31, "remove forcing the kv block size as 16 in vLLM backend")
removed it on main, after v1.0.1 and v1.1.0-dev.1 were cut; v1.1.0 (2026-05-01) is the first
release with it (docs/reference/release-artifacts.md)."""

CONNECTOR_REMOVED = (1, 0, 0)
"""The first Dynamo release whose ``dynamo.vllm`` takes no ``--connector``: ai-dynamo/dynamo
PR #6450 (in v1.0.0) made ``--connector`` a ``ValueError`` for the vLLM backend and its
default ``[]`` (``_reject_connector_flag`` in ``components/src/dynamo/vllm/args.py``; a
prefill worker must give ``--kv-transfer-config``). The releases before it default
``--connector`` to ``["nixl"]``; the block size stays 16 until 1.1.0
(``BLOCK_SIZE_LEFT_TO_VLLM``), so a launcher that takes ``--connector`` also sets it."""

_DYNAMO_TAG = re.compile(r"^(?:dynamo[-_]?)?v?(\d+)\.(\d+)(?:\.(\d+))?")
"""A release at the start of the tag, also after ``dynamo-`` (development builds are tagged
``dynamo-v0.7.1.dev.<commit>-vllm-runtime``)."""


def dynamo_release(image: str | None) -> tuple[int, int, int] | None:
    """The Dynamo release a Dynamo runtime image's tag names (``ai-dynamo/vllm-runtime:1.0.1``,
    ``ai-dynamo-vllm-runtime:1.2.0``, ``dynamo-dev/x:dynamo-v0.7.1.dev.1247fe315``), or
    None (another image, a tag such as ``my-tag``)."""
    if not image:
        return None
    from kvconfig.load.engine_fields import split_image

    repo, tag = split_image(image)
    if "dynamo" not in repo.lower() or tag is None:
        return None
    m = _DYNAMO_TAG.match(tag.lower())
    if m is None:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def _launcher_defaults(
    image: str | None, connectors: Sequence[str], line: int | None
) -> tuple[dict[str, Any], Note]:
    """What ``dynamo.vllm`` sets after parsing, for the Dynamo release the image names: the
    block size only before v1.1.0. Without a release, ``--connector`` (taken only by the
    launchers that also set the block size) says an older one; else the current launcher
    is assumed and the note says so."""
    release = dynamo_release(image)
    defaults = dict(DYNAMO_DEFAULTS)
    if release is not None:
        said = "Dynamo " + ".".join(map(str, release))
        old = release < BLOCK_SIZE_LEFT_TO_VLLM
    elif connectors:
        said, old = "the dynamo.vllm that takes --connector", True
    else:
        said, old = "the current dynamo.vllm (the image tag names no Dynamo release)", False
    if old:
        text = f"{said} sets block size 16 and turns prefix caching on when vLLM's "
        text += "arguments leave them unset"
    else:
        del defaults["block-size"]
        text = f"{said} leaves the block size to vLLM (Dynamo releases before 1.1.0 set 16) "
        text += "and turns prefix caching on when vLLM's arguments leave it unset"
    return defaults, Note("launcher-default", text, line, "dynamo.vllm")


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
``components/src/dynamo/vllm/args.py`` of the Dynamo releases that take ``--connector``,
whose default is ``nixl``: ``parser.add_argument("--connector", nargs="*",
default=["nixl"])``, later ``DYN_CONNECTOR``; a ``--kv-transfer-config`` of the user's own
replaces it)."""


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


def split_args(
    words: Sequence[str], line: int | None = None, source: str = "", image: str | None = None
) -> Split:
    """``python -m dynamo.vllm WORDS``: vLLM's words, Dynamo's role, and the defaults the
    launcher of the Dynamo release ``image`` names sets."""
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
    given = _gives_transfer_config(out)
    release = dynamo_release(image)
    if connectors and release is not None and release >= CONNECTOR_REMOVED:
        raise InputError(
            f"dynamo.vllm of Dynamo {'.'.join(map(str, release))} refuses --connector "
            "(removed in Dynamo 1.0.0 for vLLM)",
            source=source,
            line=line,
            key="--connector",
            hint="give --kv-transfer-config "
            """'{"kv_connector":"NixlConnector","kv_role":"kv_both"}' instead""",
        )
    defaulted = not connectors and not given and release is not None
    if defaulted and release is not None and release < CONNECTOR_REMOVED:
        connectors = ["nixl"]  # the launchers that take --connector default it to nixl
    config = connector_config(connectors)
    if config is not None:
        if given:
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
                f"dynamo.vllm turns --connector {' '.join(connectors)}"
                f"{' (its default)' if defaulted else ''} into the kv-transfer "
                f"config {config['kv_connector']}",
                line,
                "--connector",
            )
        )
    defaults, note = _launcher_defaults(image, connectors, line)
    notes.append(note)
    return Split(out, role, notes, defaults)


def _gives_transfer_config(words: Sequence[str]) -> bool:
    names = ("--kv-transfer-config", "--kv_transfer_config")
    return any(w.split("=", 1)[0] in names for w in words)


def one_launcher(engines: list[Any]) -> list[Any]:
    """One image runs one ``dynamo.vllm`` (a launch script, the one installed): workers of a
    resource that share an image whose tag names no Dynamo release take the launcher
    defaults that any of them shows. One passing ``--connector`` runs a launcher from
    before Dynamo 1.0.0, which sets block size 16 and defaults ``--connector`` to nixl
    (``CONNECTOR_REMOVED``), so a sibling that passes neither ``--connector`` nor
    ``--kv-transfer-config`` gets the NixlConnector config too."""
    from dataclasses import replace

    old = {
        e.image for e in engines if dynamo_release(e.image) is None and "block-size" in e.defaults
    }
    out = []
    for e in engines:
        if e.entry != "dynamo.vllm" or e.image not in old or "block-size" in e.defaults:
            out.append(e)
            continue
        where = f"the image {e.image}" if e.image else "the script"
        text = (
            f"{where} runs the dynamo.vllm that another worker's --connector shows: it sets "
            "block size 16 and turns prefix caching on when vLLM's arguments leave them unset"
        )
        argv = e.argv
        if not _gives_transfer_config(argv):
            config = connector_config(["nixl"])
            argv = (*argv, "--kv-transfer-config", json.dumps(config, separators=(",", ":")))
            text += ", and turns its default --connector nixl into the kv-transfer config "
            text += "NixlConnector"
        note = Note("launcher-default", text, e.line, "dynamo.vllm")
        kept = tuple(
            n for n in e.notes if not (n.kind == "launcher-default" and n.key == "dynamo.vllm")
        )
        out.append(
            replace(e, argv=argv, defaults={**e.defaults, **DYNAMO_DEFAULTS}, notes=(*kept, note))
        )
    return out


def decode_workers(engines: list[Any]) -> list[Any]:
    """In a graph with prefill workers, a ``dynamo.vllm`` worker that is not one is the
    decode worker: ``dynamo.vllm``'s ``main.py`` starts ``init_prefill`` for
    ``--is-prefill-worker`` and the decode worker (``DecodeWorkerHandler``, which hands
    prefill to the prefill workers when they are registered) otherwise."""
    from dataclasses import replace

    workers = [e for e in engines if e.entry == "dynamo.vllm"]
    if not any(e.role == "prefill" for e in workers):
        return engines
    return [
        replace(e, role="decode") if e.entry == "dynamo.vllm" and e.role is None else e
        for e in engines
    ]
