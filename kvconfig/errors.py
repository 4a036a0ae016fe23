"""Every error kvconfig raises. All derive from ``KVConfigError`` and survive pickling,
because vLLM raises them in worker processes and re-raises them elsewhere.

Public (``kvconfig.__all__``): ``KVConfigError``, ``InputError`` (bad input, one line),
``UnsupportedArchitecture`` (a model kvconfig cannot derive), ``NoCommonKernelBlockSize``
and ``KernelBlockSizeMismatch`` (raised by the vLLM hooks). The others mirror where
vLLM fails at start-up; the resolver turns them into findings, the loaders into
``InputError``, so they never reach a caller of the API.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class KVConfigError(ValueError):
    """Base of all kvconfig errors."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), dict(self.__dict__), str(self)))


def _rebuild(cls: type[KVConfigError], state: dict[str, Any], text: str) -> KVConfigError:
    err = cls.__new__(cls)
    ValueError.__init__(err, text)
    err.__dict__.update(state)
    return err


class InputError(KVConfigError):
    """Bad input: a file, a key or a command-line value kvconfig cannot use.

    Renders as one line, ``file:line: key: what was wrong (how to fix it)``; the
    parts that are unknown are left out (docs/errors.md).
    """

    def __init__(
        self,
        message: str,
        *,
        source: str = "",
        line: int | None = None,
        key: str = "",
        hint: str = "",
    ) -> None:
        self.message = message
        self.source = source
        self.line = line
        self.key = key
        self.hint = hint
        super().__init__(self.render())

    def render(self) -> str:
        """The one-line form shown to users."""
        where = self.source
        if where and self.line is not None:
            where = f"{where}:{self.line}"
        parts = [p for p in (where, self.key) if p]
        text = ": ".join([*parts, self.message])
        if self.hint:
            text = f"{text} ({self.hint})"
        # one line, always: a file name or value with a line break must not split it
        return text.replace("\r", "\\r").replace("\n", "\\n")

    def located(self, source: str, line: int | None = None) -> InputError:
        """The same error, attributed to ``source`` (and ``line``) if it had no source.

        An error about another file (a model's ``config.json``) keeps its own place.
        """
        if self.source and self.source != source:
            return self
        return InputError(
            self.message,
            source=self.source or source,
            line=self.line if self.line is not None else line,
            key=self.key,
            hint=self.hint,
        )


class UnsupportedArchitecture(KVConfigError):
    """vLLM knows the architecture but kvconfig cannot derive its layers.

    ``snippet`` is a native-file sketch of the layers, filled from what the
    ``config.json`` says (finding KV401 shows it).
    """

    def __init__(self, architecture: str, source: str, snippet: str = "") -> None:
        self.architecture = architecture
        self.source = source
        self.snippet = snippet
        message = (
            f"{source}: kvconfig cannot derive the KV-cache layers of {architecture!r}; "
            "plan it with vLLM's own start-up (--engine vllm, with kvconfig[vllm] installed), "
            "or describe them in a native kvconfig file (docs/native-format.md)"
        )
        super().__init__(message + (", starting from:\n" + snippet if snippet else ""))


class DeploymentError(KVConfigError):
    """A contradiction inside a deployment (``schemas.deployment``), with the path of the
    key it is about; the loaders report it as an ``InputError`` at that key's line."""

    def __init__(self, message: str, loc: tuple[str | int, ...], hint: str) -> None:
        self.message = message
        self.loc = loc
        self.hint = hint
        super().__init__(message)


class ScriptStops(KVConfigError):
    """A launch script stops here (``exit``, ``exec``, ``${X:?}`` unset, a special
    builtin failing in dash). Internal to ``kvconfig.load.shell``, which catches it where
    the shell would end the script or subshell; it never reaches a caller."""

    def __init__(self, reason: str = "") -> None:
        self.reason = reason
        super().__init__(reason)


class ScriptJumps(KVConfigError):
    """``break``/``continue``/``return`` of a launch script leaving ``count`` loops or a
    function. Internal to ``kvconfig.load.shell``, like ``ScriptStops``."""

    def __init__(self, kind: str, count: int) -> None:
        self.kind = kind
        self.count = count
        super().__init__(f"{kind} {count}")


class NoCommonBlockSize(KVConfigError):
    """Without ``--block-size``, no block size suits every attention backend.

    Mirrors ``Platform._preferred_block_size_for_backends`` raising
    (``vllm/platforms/interface.py``): "The attention backends share no supported KV
    cache block size".
    """

    def __init__(self, names: Sequence[str]) -> None:
        self.names = list(names)
        super().__init__(", ".join(self.names))


class AlignedBlockSizeUnsupported(KVConfigError):
    """Hybrid alignment moved B to a size some backend rejects.

    Mirrors ``Platform._check_aligned_block_size`` (``vllm/platforms/interface.py``).
    """

    def __init__(self, block_size: int, names: Sequence[str]) -> None:
        self.block_size = block_size
        self.names = list(names)
        super().__init__(f"{block_size}: {', '.join(self.names)}")


class GroupingError(KVConfigError):
    """vLLM cannot group these KV-cache specs: ``get_kv_cache_groups``
    (``vllm/v1/core/kv_cache_planning.py``) raises at start-up with this message."""


def describe(value: Any) -> str:
    """``the list [1, 2]``: a value and its type, shortened, for error messages."""
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    kinds = {int: "integer", float: "number", str: "string", list: "list", dict: "mapping"}
    text = repr(value)
    if len(text) > 40:
        text = text[:37] + "..."
    return f"the {kinds.get(type(value), type(value).__name__)} {text}"


class NoCommonKernelBlockSize(KVConfigError):
    """No kernel block size divides B and is accepted by every backend of a group.

    The message matches vLLM's ``select_common_block_size`` error
    (``vllm/v1/worker/utils.py``).
    """

    def __init__(self, block_size: int, declared: Sequence[tuple[str, str]]) -> None:
        self.block_size = block_size
        self.declared = list(declared)
        body = "; ".join(f"{name}: {sizes}" for name, sizes in self.declared)
        super().__init__(f"No common block size for {block_size} ({body}).")


class KernelBlockSizeMismatch(KVConfigError):
    """A KV-cache group's kernel block size is not the one the KV cache was allocated with.

    Raised by the kvconfig vLLM hooks at start-up, before the engine serves a request.
    ``reason`` says what was found:

    * ``mismatch``: a component (the speculator, a V1 drafter) uses ``found``-token
      kernel pages where the model runner split the cache into ``expected``-token pages;
    * ``unverified``: a speculator was set up without passing through the hook, so
      nothing guarantees it uses the runner's pages;
    * ``catalog``: kvconfig's own vote (its backend catalog) gives ``found`` where
      vLLM's model runner chose ``expected`` (``KVCONFIG_MODE=strict`` only).

    The fields survive pickling (vLLM workers are separate processes).
    """

    def __init__(
        self,
        *,
        group: int,
        layers: Sequence[str],
        backends: Sequence[str],
        block_size: int,
        expected: int,
        found: int | None,
        component: str = "speculator",
        component_layers: Sequence[str] = (),
        reason: str = "mismatch",
        mode: str = "enforce",
        detail: str = "",
    ) -> None:
        self.group = group
        self.layers = list(layers)
        self.backends = list(backends)
        self.block_size = block_size
        self.expected = expected
        self.found = found
        self.component = component
        self.component_layers = list(component_layers)
        self.reason = reason
        self.mode = mode
        self.detail = detail
        super().__init__(self.render())

    @staticmethod
    def _shown(names: Sequence[str]) -> str:
        head = ", ".join(names[:3])
        return head + (f" and {len(names) - 3} more" if len(names) > 3 else "")

    def _consequence(self) -> str:
        if self.found == self.block_size:
            return (
                "Its attention would read the wrong KV pages: draft tokens after the first "
                "would be rejected (acceptance collapses) while the output stays correct."
            )
        if self.found is not None and self.found > self.expected:
            return (
                "vLLM would then stop while binding the KV cache with a misleading error "
                "about packed blocks that cannot be split."
            )
        return "Its attention would read KV pages of the wrong size."

    def _fixes(self) -> str:
        fixes = []
        if self.mode != "enforce":
            fixes.append("run with KVCONFIG_MODE=enforce (the default)")
        fixes.append(f"set --block-size {self.expected}")
        fixes.append(
            "give the drafter the target's attention backend (speculative-config attention_backend)"
        )
        return "Fix: " + ", or ".join(fixes) + "."

    def render(self) -> str:
        """The operator-facing message: one paragraph."""
        where = (
            f"kvconfig: KV-cache group {self.group} ({self._shown(self.layers)}; "
            f"backends {', '.join(self.backends)})"
        )
        who = self.component
        if self.component_layers:
            who = f"{who} (layers {self._shown(self.component_layers)})"
        if self.reason == "catalog":
            text = (
                f"{where} has {self.block_size}-token blocks. vLLM's model runner split them "
                f"into {self.expected}-token kernel pages, but kvconfig's backend catalog votes "
                f"{'no common size' if self.found is None else f'{self.found}-token pages'}: "
                "vLLM's rules differ from the ones kvconfig was built for, so its plan cannot "
                "be vouched for and KVCONFIG_MODE=strict refuses to start. Fix: use a kvconfig "
                "release whose catalog matches this vLLM, or run with KVCONFIG_MODE=enforce "
                "(logs the difference and starts)."
            )
        elif self.reason == "unverified":
            text = (
                f"{where} has {self.block_size}-token blocks that the model runner split into "
                f"{self.expected}-token kernel pages, but the {who} was set up without passing "
                "through kvconfig's hook on DraftModelSpeculator.set_attn (its class overrides "
                "set_attn without calling it), so nothing guarantees it reads those pages; it "
                f"uses {self.found}-token pages. kvconfig refuses to start rather than risk "
                "silently wrong draft attention. Fix: run that speculator through "
                "DraftModelSpeculator.set_attn, or set --block-size "
                f"{self.expected}, or run with KVCONFIG_MODE=warn to start anyway."
            )
        else:
            text = (
                f"{where} has {self.block_size}-token blocks that the model runner split into "
                f"{self.expected}-token kernel pages, but the {who} uses "
                f"{self.found}-token pages. {self._consequence()} {self._fixes()}"
            )
        if self.detail:
            text = f"{text} {self.detail}"
        return text


# ---- fleet: errors the kvconfig hooks raise for KV connectors (hooks/_connectors.py) ----


def _plan_text(plan: dict[str, Any]) -> str:
    """``B=128, pages 64 x2, TP 1, FLASHINFER, LBHNC``: a connector's block-size plan."""
    bits = [
        f"B={plan.get('block_size')}",
        f"pages {plan.get('kernel_block_size')} x{plan.get('pages_per_block')}",
        f"TP {plan.get('tp')}",
    ]
    if (plan.get("dcp") or 1) > 1:
        bits.append(f"DCP {plan.get('dcp')}")
    bits += [str(plan.get("backend")), str(plan.get("layout"))]
    if plan.get("host_buffer"):
        bits.append("host buffer")
    return ", ".join(bits)


class HandshakeRefused(KVConfigError):
    """The kvconfig hooks refuse a KV-transfer handshake that vLLM would accept and then
    corrupt, or that vLLM would fail with an error that does not say why.

    Raised inside the connector's ``add_remote_agent`` (NIXL), before vLLM's own checks.
    Fields: ``local_engine`` and ``remote_engine`` (engine ids), ``local_plan`` and
    ``remote_plan`` (block size, kernel pages, pages per block, TP, DCP, backend,
    layout, host buffer), ``check`` (which rule refuses), ``vllm_error`` (what vLLM
    would raise, or empty when it would go on silently), ``consequence``, ``fixes`` and
    ``mode``. Survives pickling.
    """

    def __init__(
        self,
        *,
        local_engine: str,
        remote_engine: str,
        local_plan: dict[str, Any],
        remote_plan: dict[str, Any],
        check: str,
        vllm_error: str = "",
        consequence: str = "",
        fixes: Sequence[str] = (),
        mode: str = "enforce",
    ) -> None:
        self.local_engine = local_engine
        self.remote_engine = remote_engine
        self.local_plan = dict(local_plan)
        self.remote_plan = dict(remote_plan)
        self.check = check
        self.vllm_error = vllm_error
        self.consequence = consequence
        self.fixes = list(fixes)
        self.mode = mode
        super().__init__(self.render())

    def render(self) -> str:
        """The operator-facing message: one paragraph naming both engines' plans."""
        what = (
            f"vLLM would then fail with '{self.vllm_error}'"
            if self.vllm_error
            else "vLLM would accept it"
        )
        if self.consequence:
            what += f": {self.consequence}"
        fix = f" Fix: {'; or '.join(self.fixes)}." if self.fixes else ""
        return (
            f"kvconfig: refusing the KV-transfer handshake of engine {self.local_engine} "
            f"({_plan_text(self.local_plan)}) with engine {self.remote_engine} "
            f"({_plan_text(self.remote_plan)}): their block-size plans disagree "
            f"({self.check}); {what}.{fix} (KVCONFIG_MODE=warn logs this and goes on.)"
        )


class ConnectorBlockSizeMismatch(KernelBlockSizeMismatch):
    """A KV connector's own kernel block size differs from the model runner's for a
    KV-cache group, and the hooks cannot hand it the runner's (the groups' runner values
    differ) or may not (``KVCONFIG_MODE=strict``). ``component`` names the connector."""

    def render(self) -> str:
        """The operator-facing message: one paragraph."""
        fixes = []
        if self.mode == "strict":
            fixes.append("run with KVCONFIG_MODE=enforce (the default)")
        fixes.append("give every transfer group backends that agree at this block size")
        text = (
            f"kvconfig: KV-cache group {self.group} ({self._shown(self.layers)}; backends "
            f"{', '.join(self.backends)}) has {self.block_size}-token blocks that the model "
            f"runner reads in {self.expected}-token kernel pages, but the {self.component} "
            f"votes once over every transfer layer and transfers it in {self.found}-token "
            "pages, pages this group does not have: transfers with an engine at another "
            "block ratio or TP size would re-lay them wrongly. Fix: " + ", or ".join(fixes) + "."
        )
        return f"{text} {self.detail}" if self.detail else text


# ---- end of fleet errors ----


class ConnectorRefusal(KVConfigError):
    """vLLM raises ``error`` (the exception type: ``AssertionError``, ``RuntimeError``,
    ...) with ``message`` (vLLM's own text) at this point."""

    def __init__(self, error: str, message: str) -> None:
        super().__init__(error, message)
        self.error = error
        self.message = message

    def __str__(self) -> str:
        return f"{self.error}: {self.message}" if self.message else self.error


class HandshakeChecked(KVConfigError):
    """The engine mode's NIXL stand-in: vLLM's handshake checks passed, so the stand-in
    stops the handshake before its transfer descriptors (``kvconfig.engine.connectors``)."""
