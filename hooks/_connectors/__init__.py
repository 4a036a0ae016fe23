"""The KV connectors as checked components, the handshake refusal, the plan digest.

Installed beside the hooks' other patches (``hooks._install``), on their own: on a vLLM
without a connector module, or one whose signatures changed, ``strict`` refuses to start
and ``enforce`` and ``warn`` lose only these checks, with an ERROR and an entry in
``hooks.status().unchecked``.
All paths are in the vLLM package.

* ``NixlBaseConnectorWorker._sync_block_size_with_kernel``
  (``distributed/kv_transfer/kv_connector/v1/nixl/base_worker.py``) and
  ``MooncakeConnectorWorker._sync_block_size_with_kernel``
  (``.../mooncake/mooncake_connector.py``): each connector votes one kernel block size
  over every transfer layer, the model runner per KV-cache group. The wrapper computes
  both with vLLM's own ``get_current_attn_backends_and_specs`` (older releases:
  ``get_current_attn_backends``, without specs, as their workers vote) and
  ``select_common_block_size`` (per group: over that group's layers). Where they differ:
  ``enforce`` hands the connector the runner's value when every split transfer group has
  the same one (the connector module's ``select_common_block_size`` answers it for the
  call), and otherwise logs it; ``strict`` refuses to start
  (``ConnectorBlockSizeMismatch``); ``warn`` logs.
* ``NixlBaseConnectorWorker.add_remote_agent``: before vLLM registers a peer, kvconfig's
  mirror of vLLM's handshake checks (``kvconfig.mirror.connectors.nixl.nixl_handshake``) runs
  on this worker and the peer's ``NixlAgentMetadata``. A pair vLLM would fail (at the
  handshake or at the first transfer), or accept while this worker's pages differ from a
  group's and the pair transfers across block ratios or TP sizes, is refused with
  ``HandshakeRefused`` in ``enforce`` and ``strict``, logged in ``warn``.
* ``export_digest``: beside each plan the hooks export (``KVCONFIG_PLAN_EXPORT``), a
  ``*.digest.json`` with the plan, this process's connectors and the plan digest
  (``kvconfig.fleet.diff.digest``), which is also logged. Ranks, pipeline stages and
  data-parallel engines compare with ``kvconfig diff``.

This package installs them; ``sync``, ``handshake`` and ``digest`` hold one each.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kvconfig.hooks._connectors.handshake import wrap_handshake
from kvconfig.hooks._connectors.sync import UTILS, wrap_sync

NIXL = "vllm.distributed.kv_transfer.kv_connector.v1.nixl.base_worker"
MOONCAKE = "vllm.distributed.kv_transfer.kv_connector.v1.mooncake.mooncake_connector"

MARK = "__kvconfig_original__"


@dataclass(frozen=True, slots=True)
class Target:
    """One patched method, and the parameters the wrapper passes on."""

    module: str
    owner: str
    attr: str
    params: tuple[str, ...]
    wrapper: str

    @property
    def name(self) -> str:
        return f"{self.module}.{self.owner}.{self.attr}"


TARGETS = (
    Target(NIXL, "NixlBaseConnectorWorker", "_sync_block_size_with_kernel", ("self",), "sync"),
    Target(
        NIXL,
        "NixlBaseConnectorWorker",
        "add_remote_agent",
        ("self", "nixl_agent_meta", "remote_tp_rank", "remote_tp_size", "remote_dcp_size"),
        "handshake",
    ),
    Target(MOONCAKE, "MooncakeConnectorWorker", "_sync_block_size_with_kernel", ("self",), "sync"),
)


_PATCHES: list[tuple[Any, str, Any, str]] = []


FACTORIES: dict[str, Callable[[Callable[..., Any], Any], Callable[..., Any]]] = {
    "sync": wrap_sync,
    "handshake": wrap_handshake,
}


def verify() -> list[str]:
    """Why the connector hooks cannot be installed (empty: they can)."""
    problems = []
    for t in TARGETS:
        try:
            mod = importlib.import_module(t.module)
        except Exception as err:
            problems.append(f"cannot import {t.module} ({type(err).__name__}: {err})")
            continue
        owner = getattr(mod, t.owner, None)
        func = getattr(owner, "__dict__", {}).get(t.attr) if isinstance(owner, type) else None
        if func is None:
            problems.append(f"{t.name} is missing")
            continue
        func = getattr(func, MARK, func)
        found = list(inspect.signature(func).parameters)
        if found[: len(t.params)] != list(t.params):
            problems.append(f"{t.name} takes ({', '.join(found)}), expected {t.params}")
        code = getattr(func, "__code__", None)
        if t.wrapper == "sync" and (
            code is None or "select_common_block_size" not in code.co_names
        ):
            problems.append(f"{t.name} no longer calls select_common_block_size")
        if t.wrapper == "sync" and not hasattr(mod, "select_common_block_size"):
            problems.append(f"{t.module} no longer imports select_common_block_size")
    try:
        utils = importlib.import_module(UTILS)
        if not any(
            hasattr(utils, f)
            for f in ("get_current_attn_backends_and_specs", "get_current_attn_backends")
        ):
            problems.append(f"{UTILS}.get_current_attn_backends_and_specs is missing")
    except Exception as err:
        problems.append(f"cannot import {UTILS} ({type(err).__name__}: {err})")
    return problems


def install() -> list[str]:
    """Patch the connectors (all or none); returns what is patched. Raises ``LookupError``
    (a target or a function the wrappers call is missing or changed) or ``RuntimeError``
    (patching failed, rolled back): ``hooks._install`` decides by mode."""
    if _PATCHES:
        return [p[3] for p in _PATCHES]
    problems = verify()
    if problems:
        raise LookupError("; ".join(problems))
    done: list[tuple[Any, str, Any, str]] = []
    try:
        for t in TARGETS:
            mod = importlib.import_module(t.module)
            owner = getattr(mod, t.owner)
            current = owner.__dict__[t.attr]
            original = getattr(current, MARK, current)
            wrapper = FACTORIES[t.wrapper](original, mod)
            setattr(wrapper, MARK, original)
            setattr(owner, t.attr, wrapper)
            done.append((owner, t.attr, original, t.name))
    except Exception as err:
        for owner, attr, original, _ in reversed(done):
            setattr(owner, attr, original)
        raise RuntimeError(
            f"patching the KV connectors failed and was rolled back ({type(err).__name__}: {err})"
        ) from err
    _PATCHES.extend(done)
    return [p[3] for p in done]


def uninstall() -> None:
    """Restore the connectors' own methods."""
    for owner, attr, original, _ in reversed(_PATCHES):
        setattr(owner, attr, original)
    _PATCHES.clear()


def patched() -> list[str]:
    """The connector methods patched in this process."""
    return [p[3] for p in _PATCHES]
