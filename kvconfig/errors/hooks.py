"""The errors of the vLLM hooks and of KV connectors: a handshake refused, a connector
reading other pages than the runner, the hooks' own machinery failing, and the engine
mode's connector stand-ins. Re-exported by ``kvconfig.errors``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kvconfig.errors.plan import KernelBlockSizeMismatch, KVConfigError


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


class HooksFailed(KVConfigError):
    """kvconfig's own machinery in the vLLM hooks failed: installing the patches, reading
    vLLM's objects, or a check that raised. ``KVCONFIG_MODE=strict`` raises it and vLLM
    does not start; ``enforce`` and ``warn`` log it as an ERROR and report it in
    ``hooks.status().unchecked`` (docs/hooks.md, "When kvconfig itself fails").

    Fields: ``what`` (the step of kvconfig's that failed), ``unchecked`` (what is not
    checked because of it), ``error`` (``Type: message`` of the failure) and ``mode``.
    Survives pickling.
    """

    def __init__(self, *, what: str, unchecked: str, error: str, mode: str = "strict") -> None:
        self.what = what
        self.unchecked = unchecked
        self.error = error
        self.mode = mode
        super().__init__(self.render())

    def render(self) -> str:
        """The operator-facing message: one line."""
        if self.mode == "strict":
            then = "KVCONFIG_MODE=strict refuses to start"
            fix = (
                " Fix: run a vLLM release the hooks support, or KVCONFIG_MODE=enforce to "
                "start with this check off (logged), and report this to kvconfig."
            )
        else:
            then = f"KVCONFIG_MODE={self.mode}: starting with it UNCHECKED"
            fix = ""
        return (
            f"kvconfig: the hooks' own machinery failed while {self.what} ({self.error}): "
            f"{self.unchecked} is not checked; {then}.{fix}"
        ).replace("\n", " ")


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
