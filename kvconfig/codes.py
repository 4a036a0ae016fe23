"""The finding codes: stable, public, documented in docs/findings.md.

CI users key on them (``kvconfig lint --format json`` puts ``code`` and ``name`` in every
finding; SARIF uses the code as the rule id). A code is never reused or renumbered.

>>> FindingCode("KV101") is FindingCode.COMPONENT_MISMATCH
True
>>> FindingCode.COMPONENT_MISMATCH.slug, FindingCode.COMPONENT_MISMATCH.severity
('component-mismatch', <Severity.ERROR: 'error'>)
"""

from __future__ import annotations

from enum import Enum


class Severity(str, Enum):
    """How much a finding weighs: any ``error`` rejects the deployment."""

    ERROR = "error"
    """vLLM fails, or silently computes the wrong thing: ``kvconfig lint`` exits 1."""
    WARNING = "warning"
    """Worth knowing; the deployment passes."""
    INFO = "info"
    """A note on what vLLM (or the hooks) will do; the deployment passes."""

    def __str__(self) -> str:
        return self.value


class FindingCode(str, Enum):
    """A finding's code (the value, ``KV101``), with its slug, severity and meaning."""

    slug: str
    """The stable name of the code, e.g. ``component-mismatch``."""
    severity: Severity
    """The severity of every finding with this code."""
    summary: str
    """One line: what the code means."""

    def __new__(cls, code: str, slug: str, severity: Severity, summary: str) -> FindingCode:
        member = str.__new__(cls, code)
        member._value_ = code
        member.slug = slug
        member.severity = severity
        member.summary = summary
        return member

    def __str__(self) -> str:
        return str.__str__(self)

    COMPONENT_MISMATCH = (
        "KV101",
        "component-mismatch",
        Severity.ERROR,
        "the speculator reads the KV cache with its own, larger kernel block size (silent)",
    )
    SPECULATOR_SPLIT_ERROR = (
        "KV102",
        "speculator-split-error",
        Severity.ERROR,
        "the speculator's kernel block size sits between the runner's and B: vLLM fails at start",
    )
    MISMATCH_FIXED_BY_HOOKS = (
        "KV103",
        "mismatch-fixed-by-hooks",
        Severity.INFO,
        "the kvconfig hooks hand the runner's kernel block size to the speculator",
    )
    NO_COMMON_KERNEL_SIZE = (
        "KV201",
        "no-common-kernel-size",
        Severity.ERROR,
        "no kernel block size divides B and suits every backend of a group: vLLM fails at start",
    )
    SPECULATOR_NO_COMMON_KERNEL_SIZE = (
        "KV202",
        "speculator-no-common-kernel-size",
        Severity.ERROR,
        "the draft layers' backends share no kernel block size: the speculator fails at start",
    )
    NO_COMMON_BLOCK_SIZE = (
        "KV203",
        "no-common-block-size",
        Severity.ERROR,
        "the backends share no KV-cache block size vLLM could default to: vLLM fails at start",
    )
    ALIGNED_BLOCK_SIZE_UNSUPPORTED = (
        "KV204",
        "aligned-block-size-unsupported",
        Severity.ERROR,
        "hybrid alignment moved B to a size an attention backend rejects: vLLM fails at start",
    )
    GROUPING_FAILS = (
        "KV205",
        "grouping-fails",
        Severity.ERROR,
        "vLLM cannot group these layers' KV-cache specs: it fails at start",
    )
    BACKEND_UNSUPPORTED = (
        "KV301",
        "backend-unsupported",
        Severity.ERROR,
        "a requested attention backend cannot run on this platform or layer: vLLM refuses it",
    )
    NO_VALID_BACKEND = (
        "KV302",
        "no-valid-backend",
        Severity.ERROR,
        "no attention backend in vLLM's priority list can run this layer",
    )
    BACKEND_CHOICE_UNKNOWN = (
        "KV303",
        "backend-choice-unknown",
        Severity.ERROR,
        "kvconfig cannot derive vLLM's automatic backend choice on this platform",
    )
    BACKEND_UNKNOWN = (
        "KV304",
        "backend-unknown",
        Severity.ERROR,
        "kvconfig has no rules for a requested attention backend on this platform",
    )
    BUILDER_REFUSES = (
        "KV305",
        "builder-refuses",
        Severity.ERROR,
        "an attention backend's metadata builder refuses the group's kernel block size at "
        "start-up (FlexAttention: not a power of two)",
    )
    NO_KV_CACHE_LAYOUT = (
        "KV306",
        "no-kv-cache-layout",
        Severity.ERROR,
        "the attention backends share no KV-cache layout: vLLM fails at start",
    )
    ARCHITECTURE_NOT_DERIVABLE = (
        "KV401",
        "architecture-not-derivable",
        Severity.WARNING,
        "kvconfig cannot derive this architecture's layers offline: the verdict is unknown "
        "(exit 0); plan it with --engine auto|vllm or describe it in a native file",
    )
    MODEL_UNAVAILABLE = (
        "KV402",
        "model-unavailable",
        Severity.WARNING,
        "the model's config.json cannot be read offline (not in the Hugging Face cache, a "
        "path inside the pod): the verdict is unknown (exit 0); give it with --model-path "
        "or --download to plan it",
    )
    RUNTIME_VALUE = (
        "KV403",
        "runtime-value",
        Severity.WARNING,
        "an option that changes the plan is only known at run time ($(TP) from a ConfigMap, "
        "$(cat FILE)): the verdict is unknown (exit 0); write the value to plan it",
    )
    BLOCK_SIZE_ADJUSTED = (
        "KV501",
        "block-size-adjusted",
        Severity.INFO,
        "vLLM changes the block size itself (hybrid alignment)",
    )
    RELEASE_ASSUMED = (
        "KV502",
        "release-assumed",
        Severity.WARNING,
        "kvconfig has no rules for the vLLM release named: the plan assumes the nearest "
        "release it knows",
    )
    VLLM_REFUSES = (
        "KV601",
        "vllm-refuses",
        Severity.ERROR,
        "vLLM's own start-up (--engine vllm) raised: the deployment does not start",
    )
    ENGINE_DIFFERS = (
        "KV602",
        "engine-differs",
        Severity.WARNING,
        "the offline plan differs from vLLM's own start-up (--engine both): an offline bug",
    )
    KV_CACHE_MEMORY = (
        "KV603",
        "kv-cache-memory",
        Severity.ERROR,
        "vLLM's start-up finds too little GPU memory for the KV cache of one longest request",
    )
    # fleets: connectors, routers and offload tiers across engines (kvconfig.fleet)
    CONNECTOR_KERNEL_SIZE_DIFFERS = (
        "KV701",
        "connector-kernel-size-differs",
        Severity.WARNING,
        "a KV connector votes another kernel block size for a transfer group than the runner",
    )
    CONNECTOR_REFUSES = (
        "KV702",
        "connector-refuses",
        Severity.ERROR,
        "vLLM refuses to build a KV connector at start-up (its own vote, layout or parallel rules)",
    )
    NIXL_BLOCK_SIZE_INDIVISIBLE = (
        "KV703",
        "nixl-block-size-indivisible",
        Severity.ERROR,
        "NIXL handshake: the local block size is no multiple of the remote one; vLLM asserts",
    )
    NIXL_HETERO_BLOCK_TP = (
        "KV704",
        "nixl-hetero-block-tp",
        Severity.ERROR,
        "NIXL: different block sizes while prefill TP > decode TP; vLLM asserts at the handshake",
    )
    NIXL_HETERO_BLOCK_HOST_BUFFER = (
        "KV705",
        "nixl-hetero-block-host-buffer",
        Severity.ERROR,
        "NIXL: different block sizes with a host buffer; vLLM asserts at the handshake",
    )
    NIXL_HETERO_BLOCK_REGION_MAPPED = (
        "KV706",
        "nixl-hetero-block-region-mapped",
        Severity.ERROR,
        "NIXL: different block sizes with region-mapped (HMA) transfers; the first transfer raises",
    )
    NIXL_MAMBA_PAGES_PER_BLOCK = (
        "KV707",
        "nixl-mamba-pages-per-block",
        Severity.ERROR,
        "NIXL: a Mamba hybrid with prefix caching needs equal pages per block on both sides",
    )
    NIXL_COMPAT_HASH = (
        "KV708",
        "nixl-compat-hash",
        Severity.ERROR,
        "the engines' NIXL compatibility hashes differ: the handshake fails after loading",
    )
    HYBRID_BLOCK_SIZE_BY_PARALLELISM = (
        "KV709",
        "hybrid-block-size-by-parallelism",
        Severity.WARNING,
        "hybrid alignment gives engines with the same --block-size another B at their parallelism",
    )
    MOONCAKE_BLOCK_SIZE = (
        "KV710",
        "mooncake-block-size",
        Severity.ERROR,
        "Mooncake P and D use different blocks; P maps D's block ids with its own ratio",
    )
    ROUTER_BLOCK_SIZE = (
        "KV711",
        "router-block-size",
        Severity.ERROR,
        "a KV-aware router hashes other block sizes than the engines report: no prefix hits",
    )
    ROUTER_HASH = (
        "KV712",
        "router-hash",
        Severity.ERROR,
        "the router's prompt hashes cannot match the engines' (algorithm or seed): silent",
    )
    OFFLOAD_CHUNK_SIZE = (
        "KV713",
        "offload-chunk-size",
        Severity.ERROR,
        "the offload chunk is no multiple of the GPU block size: vLLM refuses to start",
    )
    OFFLOAD_NAMESPACE = (
        "KV714",
        "offload-namespace",
        Severity.ERROR,
        "engines sharing a file tier write to different namespaces: a silent 0% hit rate",
    )
    PREFIX_MATCH_UNIT = (
        "KV715",
        "prefix-match-unit",
        Severity.ERROR,
        "--prefix-match-unit does not divide every prefix-cacheable block size: vLLM refuses",
    )
    CONNECTOR_LAYOUT_MISMATCH = (
        "KV716",
        "connector-layout-mismatch",
        Severity.ERROR,
        "a MultiConnector's children require different KV-cache layouts: vLLM refuses",
    )
    PIPELINE_STAGES_DIFFER = (
        "KV717",
        "pipeline-stages-differ",
        Severity.WARNING,
        "pipeline stages vote different kernel block sizes for one group",
    )
    NIXL_HANDSHAKE_REFUSED = (
        "KV718",
        "nixl-handshake-refused",
        Severity.ERROR,
        "another NIXL handshake check refuses the pair (TP, DCP, layout, KV replication)",
    )
    CONNECTOR_FIXED_BY_HOOKS = (
        "KV719",
        "connector-fixed-by-hooks",
        Severity.INFO,
        "the kvconfig hooks hand the runner's kernel block size to the KV connector",
    )
    CONNECTOR_PAGES_TRANSFER = (
        "KV720",
        "connector-pages-transfer",
        Severity.ERROR,
        "a connector's pages differ from a group's and the pair transfers across ratios (silent)",
    )
    PREFIX_HASH_SEED = (
        "KV721",
        "prefix-hash-seed",
        Severity.ERROR,
        "engines that share prefix-cache hashes derive them from random per-process seeds",
    )
    NIXL_HEAD_SPLIT_LAYOUT = (
        "KV722",
        "nixl-head-split-layout",
        Severity.ERROR,
        "NIXL splits pages by heads across TP sizes in a layout that is not block-contiguous",
    )
    # --- inputs: what vLLM does with a deployment's text that the text hides (KV8xx) ---
    CONFIG_EQUALS_IGNORED = (
        "KV801",
        "config-equals-ignored",
        Severity.WARNING,
        "vLLM ignores --config=FILE (one word): the file's options never reach the engine",
    )
    DOTTED_REPLACES = (
        "KV802",
        "dotted-replaces",
        Severity.WARNING,
        "dotted --OPTION.key arguments replace the whole --OPTION given before them",
    )
    CONFIG_VALUE_DROPPED = (
        "KV803",
        "config-value-dropped",
        Severity.WARNING,
        "vLLM drops a config file's 'key_with_underscores: false': the option keeps its default",
    )
    RUNTIME_ENVIRONMENT = (
        "KV804",
        "runtime-environment",
        Severity.WARNING,
        "an environment variable that changes the plan is only set at run time (Secret, envFrom)",
    )
    RUNTIME_ARGUMENTS = (
        "KV805",
        "runtime-arguments",
        Severity.WARNING,
        "arguments only known at run time (a Secret's VLLM_ADDITIONAL_ARGS, a run-time $EXTRA_ARGS "
        "after the model) may change the plan",
    )
    DUPLICATE_KEY = (
        "KV806",
        "duplicate-key",
        Severity.WARNING,
        "a YAML key is given twice: vLLM's config reader and Helm keep the last value",
    )
    RUNTIME_BRANCH = (
        "KV810",
        "runtime-branch",
        Severity.WARNING,
        "a launch script runs this vLLM command only on a condition known at run time",
    )
    COMMAND_DROPPED = (
        "KV811",
        "command-dropped",
        Severity.WARNING,
        "docker-compose stops a string command at | ; & < >: the rest never runs",
    )
    SERVER_REFUSED = (
        "KV812",
        "server-refused",
        Severity.ERROR,
        "vLLM's parser refuses one server's command in a file that starts several: that "
        "server never starts, and the fleet runs without it",
    )

    # --- untrusted input: what kvconfig does not run, read or pass on (KV9xx) ---
    REMOTE_CODE_IGNORED = (
        "KV901",
        "remote-code-ignored",
        Severity.WARNING,
        "the deployment asks vLLM to run its model folder's code (trust_remote_code); "
        "--engine vllm planned with vLLM's own classes (kvconfig's --trust-remote-code allows it)",
    )
    ENGINE_ENV_DROPPED = (
        "KV902",
        "engine-env-dropped",
        Severity.INFO,
        "a variable of the deployment's environment is not passed to vLLM's start-up "
        "(--engine vllm passes only VLLM_* and library variables that change the plan)",
    )


__all__ = ["FindingCode", "Severity"]
