"""Fleet engines kvconfig cannot plan offline, and the checks that need no model.

An engine whose model's layers kvconfig cannot derive (finding KV401), whose model's
``config.json`` it cannot read offline (KV402: a Hugging Face id not in the cache, a path
that is a mount inside the pod), or with an option that changes the plan only known at
run time (KV403: ``--tensor-parallel-size $(TP)`` from a ConfigMap) still belongs to its
fleet: its name, role, replicas,
parallel sizes, connector and block size are what its file says (``kvconfig.load.reading``),
it forms P/D pairs and sits behind the router. Its plan is "cannot tell" (the fleet's
verdict is ``unknown`` unless another finding rejects it), and the rules that need only
what the files say still run on it:

* KV711: a KV-aware router with a block size of its own (set, or llm-d's default 16)
  against an engine's ``--block-size`` (or its launcher's default);
* KV710: a Mooncake pair whose engines set different block sizes;
* KV703: a NIXL pair whose block sizes do not divide one another (the handshake asserts
  one is a multiple of the other, whichever side is local).

A model that changes the block size itself (hybrid alignment) can only make a finding of
these go away, never appear; the messages say so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from kvconfig.fleet.components.groups import kind_of
from kvconfig.fleet.model import EngineSpec
from kvconfig.fleet.read import KV_ROLES
from kvconfig.fleet.rules.common import Issue, role_pairs
from kvconfig.fleet.rules.routers import ROUTER_SETTING, RouterSpec

if TYPE_CHECKING:
    from kvconfig.load.reading import Reading

ALIGNED = (
    "unless the model is a hybrid whose block size vLLM aligns itself (kvconfig could not "
    "read the model)"
)


@dataclass(frozen=True)
class Unplanned:
    """A fleet engine planned as "cannot tell"."""

    spec: EngineSpec
    """The engine, its role resolved from its connector as for planned engines."""
    code: str
    """KV401 (layers not derivable), KV402 (config.json not readable offline) or KV403
    (an option that changes the plan only known at run time)."""
    why: str
    """The architecture (KV401), the input error's text (KV402) or the run-time value's
    (KV403)."""
    reading: Reading | None
    """What its file says (None for an engine that is not an operator file's)."""

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def block_size(self) -> int | None:
        """``--block-size`` or the launcher's default; None: vLLM picks it."""
        if self.reading is not None:
            return self.reading.block_size
        value = self.spec.given.get("block-size")
        return int(value) if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def connectors(self) -> list[str]:
        """The connector names (a MultiConnector's children)."""
        name = self.reading.connector if self.reading is not None else None
        if not name:
            return []
        head, _, inner = name.partition("(")
        return inner.rstrip(")").split(",") if inner else [head]

    def kind(self) -> str | None:
        """nixl or mooncake when the engine transfers KV with one, else None."""
        for c in self.connectors:
            if kind_of(c) in ("nixl", "mooncake"):
                return kind_of(c)
        return None


def unplanned(spec: EngineSpec, code: str, why: str) -> Unplanned:
    """The engine as read, its role resolved (``auto``: from a NIXL or Mooncake kv_role)."""
    reading = None
    if spec.engine is not None:
        from kvconfig.load.reading import reading_of

        reading = reading_of(spec.engine)
    found = Unplanned(spec, code, why, reading)
    if spec.role == "auto":
        role = "both"
        if found.kind() is not None and reading is not None and reading.kv_role:
            role = KV_ROLES.get(reading.kv_role, "both")
        found = replace(found, spec=replace(spec, role=role))
    return found


def unplanned_json(u: Unplanned) -> dict[str, Any]:
    """One unplanned engine of the fleet plan (``schemas.fleet_plan.UnplannedEngine``)."""
    r = u.reading
    return {
        "name": u.name,
        "role": u.spec.role,
        "replicas": u.spec.replicas * (r.data if r is not None else 1),
        "source": u.spec.source,
        "code": u.code,
        "why": u.why,
        "model": r.model if r is not None else None,
        "parallelism": {
            "tensor": r.tensor if r is not None else 1,
            "pipeline": r.pipeline if r is not None else 1,
            "data": r.data if r is not None else 1,
        },
        "block_size": u.block_size,
        "connector": r.connector if r is not None else None,
        "kv_role": r.kv_role if r is not None else None,
        "run_time": dict(r.run_time) if r is not None else {},
    }


def unplanned_issues(found: Sequence[Unplanned]) -> list[Issue]:
    """KV401, KV402 or KV403 for each engine kvconfig has not planned."""
    out = []
    for u in found:
        if u.code == "KV401":
            what = f"kvconfig cannot derive the KV-cache layers of architecture {u.why!r} offline"
            fixes = [
                "plan the engine with vLLM's own start-up: kvconfig plan --engine vllm FILE",
                "or describe its layers in a native deployment file (docs/native-format.md)",
            ]
        elif u.code == "KV403":
            what = f"kvconfig cannot tell its plan ({u.why})"
            fixes = [
                "write the value in the file",
                "or lint the manifests as they are applied, with the values filled in",
            ]
        else:
            what = f"kvconfig cannot read its model offline ({u.why})"
            fixes = [
                "map the model to a folder with its config.json: --model-path PATTERN=DIR",
                "or let kvconfig fetch config.json: --download",
            ]
        out.append(
            Issue(
                u.code,
                [u.name],
                f"{u.name}: {what}, so its plan is unknown; only the fleet checks that need "
                "no model (roles, pairs, connectors, explicit block sizes, routers) ran on "
                "it. The fleet's verdict is unknown unless another finding rejects it.",
                "unknown: kvconfig has not planned this engine",
                fixes,
            )
        )
    return out


def refused_issues(refused: Sequence[EngineSpec]) -> list[Issue]:
    """KV812 for each server of an operator file whose command vLLM's parser refuses: it
    exits with status 2, so the fleet runs without it (the others are planned)."""
    return [
        Issue(
            "KV812",
            [spec.name],
            f"{spec.name}: vLLM's parser refuses its command, so this server never starts "
            f"and the fleet runs without it: {spec.refused}",
            "fails: vllm serve exits with status 2 before the engine starts",
            [
                "fix the command as the error says",
                "or remove the server from the file if it is not meant to run",
            ],
        )
        for spec in refused
    ]


def _router_size(router: RouterSpec) -> tuple[int | None, str]:
    if router.block_size is not None:
        return router.block_size, "set"
    if router.kind == "llm-d":
        return 16, "llm-d's default"
    return None, ""


def modelless_issues(
    found: Sequence[Unplanned], routers: Sequence[RouterSpec], planned: Sequence[Any]
) -> list[Issue]:
    """KV711, KV710, KV703 from what the files say, for pairs and routers with an unplanned
    engine (pairs of two planned engines are the planned rules' own)."""
    out: list[Issue] = []
    for router in routers:
        size, origin = _router_size(router)
        if router.kind == "none" or size is None:
            continue
        for u in found:
            if router.engines and u.name not in router.engines:
                continue
            b = u.block_size
            if b is None or b == size:
                continue
            out.append(
                Issue(
                    "KV711",
                    [u.name],
                    f"The {router.kind} router hashes prompts in {size}-token blocks "
                    f"({origin}); {u.name} runs with --block-size {b} and publishes its KV "
                    f"events in {b}-token blocks, {ALIGNED}.",
                    "silent: the router's block hashes never match the engine's events, so "
                    "routing falls back to load only",
                    [
                        f"set {ROUTER_SETTING.get(router.kind, 'the router block size')} to {b}",
                        f"or --block-size {size} on {u.name}",
                    ],
                    values={"router.block_size": size, f"{u.name}.block_size": b},
                )
            )
    members: list[Any] = [*planned, *found]
    for p, d in role_pairs(members):
        if not (isinstance(p, Unplanned) or isinstance(d, Unplanned)):
            continue
        bp, bd = _block(p), _block(d)
        kind = _kind(p) if _kind(p) == _kind(d) else None
        if bp is None or bd is None or bp == bd or kind is None:
            continue
        values: dict[str, int | str | None] = {
            f"{p.name}.block_size": bp,
            f"{d.name}.block_size": bd,
        }
        if kind == "mooncake":
            out.append(
                Issue(
                    "KV710",
                    [p.name, d.name],
                    f"Mooncake pairs {p.name} (--block-size {bp}) with {d.name} (--block-size "
                    f"{bd}), {ALIGNED}: the sender maps the decode engine's block ids with its "
                    "own block size (mooncake/mooncake_connector.py:_logical_to_kernel_block_ids).",
                    "the decode engine reads KV from other blocks than the prefill engine wrote",
                    [f"--block-size {min(bp, bd)} on both engines"],
                    values=values,
                )
            )
        elif kind == "nixl" and bp % bd and bd % bp:
            out.append(
                Issue(
                    "KV703",
                    [p.name, d.name],
                    f"NIXL pairs {p.name} (--block-size {bp}) with {d.name} (--block-size {bd}), "
                    f"{ALIGNED}: neither block size is a multiple of the other.",
                    "vLLM asserts at the NIXL handshake (nixl_connector.py: the local block size "
                    "must be a multiple of the remote one)",
                    [f"--block-size {min(bp, bd)} on both engines"],
                    values=values,
                )
            )
    return out


def _block(member: Any) -> int | None:
    if isinstance(member, Unplanned):
        return member.block_size
    return int(member.deployment.block_size) if member.deployment.block_size else None


def _kind(member: Any) -> str | None:
    if isinstance(member, Unplanned):
        return member.kind()
    from kvconfig.fleet._load import kv_transfer_of
    from kvconfig.fleet.components.groups import entries

    for entry in entries(kv_transfer_of(member.options, member.spec.source)):
        kind = kind_of(str(entry.get("kv_connector")))
        if kind in ("nixl", "mooncake"):
            return kind
    return None
