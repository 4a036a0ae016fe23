"""A container's environment (``env``, ``envFrom``) and Kubernetes' ``$(VAR)`` expansion."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kvconfig.load.kubernetes.resources import Resource, _describe

_K8S_VAR = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


@dataclass
class ContainerEnv:
    """A container's environment as far as the manifest says it."""

    known: dict[str, str] = field(default_factory=dict)
    unknown: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)

    def shell_env(self) -> dict[str, str | None]:
        env: dict[str, str | None] = dict(self.known)
        for name in self.unknown:
            env[name] = None
        return env


def container_env(
    container: Mapping[str, Any],
    res: Resource,
    path: tuple[str | int, ...],
    key: str,
    base: Mapping[str, str] | None = None,
) -> ContainerEnv:
    """``env`` and ``envFrom`` of a container: literal values (``$(VAR)`` of earlier
    variables expanded, as Kubernetes does), names set from elsewhere, and whole sources.

    A ``configMapKeyRef`` or ``envFrom`` ``configMapRef`` to a ConfigMap the input creates
    in the pod's namespace takes that ConfigMap's value (``envFrom`` keys with their
    ``prefix``). Any other variable the cluster sets (``valueFrom``: a Secret, a ConfigMap,
    the pod; or any name an ``envFrom`` source may hold) takes the value the user gives for it
    (``res.given``, ``--env NAME=VALUE``), as the kubelet gives the container the
    cluster's value before it expands ``$(VAR)`` (``makeEnvironmentVariables``,
    ``pkg/kubelet/kubelet_pods.go``: ``envFrom`` first, then ``env`` in order, each
    ``value`` expanded from those before it). A name the container's env does not
    define is never given: Kubernetes leaves its ``$(NAME)`` as text."""
    env = ContainerEnv(known=dict(base or {}))
    given = getattr(res, "given", {})
    sources = container.get("envFrom") or []
    if isinstance(sources, list):
        for item in sources:
            if not isinstance(item, dict):
                continue
            for ref in ("configMapRef", "secretRef"):
                if not isinstance(item.get(ref), dict):
                    continue
                found = _config_map(res, item[ref]) if ref == "configMapRef" else None
                if found is None:
                    env.sources.append(f"{ref} {item[ref].get('name', '?')}")
                    continue
                given_prefix = item.get("prefix")
                prefix = given_prefix if isinstance(given_prefix, str) else ""
                for k, v in found.items():  # every key a variable name, as the kubelet takes
                    if _ENV_NAME.fullmatch(prefix + k):
                        env.known[prefix + k] = v
    if env.sources:
        env.known.update(given)
    items = container.get("env") or []
    if not isinstance(items, list):
        raise res.err(
            f"env: expected a list of name/value pairs, got {_describe(items)}",
            (*path, "env"),
            key,
            "write env: [{name: NAME, value: VALUE}]",
        )
    for i, item in enumerate(items):
        where = (*path, "env", i)
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise res.err(
                f"env[{i}]: expected a mapping with a name", where, key, "write {name: X, value: Y}"
            )
        name = item["name"]
        if "valueFrom" in item and name not in given:
            value_from = item["valueFrom"] if isinstance(item["valueFrom"], dict) else {}
            key_ref = value_from.get("configMapKeyRef")
            held = _config_map(res, key_ref) if isinstance(key_ref, dict) else None
            looked_up = key_ref.get("key") if isinstance(key_ref, dict) else None
            if held is not None and isinstance(looked_up, str) and looked_up in held:
                env.known[name] = held[looked_up]  # the input's ConfigMap: not expanded
                if name in env.unknown:
                    env.unknown.remove(name)
                continue
        if "valueFrom" in item:
            if name in given:  # the cluster's value, as given: not expanded again
                env.known[name] = given[name]
                if name in env.unknown:
                    env.unknown.remove(name)
                continue
            env.known.pop(name, None)
            if name not in env.unknown:
                env.unknown.append(name)
            continue
        value = item.get("value", "")
        if not isinstance(value, str):
            value = (
                ""
                if value is None
                else str(value).lower()
                if isinstance(value, bool)
                else str(value)
            )
        expanded, _ = expand_k8s(value, env)
        if name in env.unknown:
            env.unknown.remove(name)
        env.known[name] = expanded
    return env


_ENV_NAME = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")
"""A name the kubelet takes as an environment variable (``IsEnvVarName``)."""


def _config_map(res: Resource, ref: Mapping[str, Any]) -> Mapping[str, str] | None:
    """The data of the ConfigMap ``ref`` names when the input creates it in the pod's own
    namespace, else None: then the cluster's (``config_map``)."""
    name = ref.get("name")
    return config_map(res, name) if isinstance(name, str) else None


def config_map(res: Any, name: str) -> Mapping[str, str] | None:
    """The data of the ConfigMap ``name`` the input creates in the namespace of ``res``:
    both name the same namespace (or none), or the ConfigMap names none, so that
    ``kubectl apply`` creates it where it applies the file: in the pod's namespace when
    the pod starts with it. One naming another namespace is not the pod's."""
    maps: Mapping[tuple[str, str], Mapping[str, str]] = getattr(res, "config_maps", {})
    found = maps.get((res.namespace, name))
    if found is None and res.namespace:
        found = maps.get(("", name))
    return found


_SERVICE_LINK = re.compile(
    r"^[A-Z_][A-Z0-9_]*_(SERVICE_HOST|SERVICE_PORT(_[A-Z0-9_]+)?"
    r"|PORT(_[0-9]+_(TCP|UDP|SCTP)(_PROTO|_PORT|_ADDR)?)?)$"
)
"""The variables the kubelet gives a container for each Service of its namespace
(``{NAME}_SERVICE_HOST``, ``{NAME}_SERVICE_PORT``, the Docker-links ``{NAME}_PORT...``;
Kubernetes "Service" docs, environment variables; with ``enableServiceLinks``, the
default): defined or not by what the cluster holds, so only known where the pod runs."""


def expand_k8s(text: str, env: ContainerEnv) -> tuple[str, list[tuple[str, str]]]:
    """``$(VAR)`` references expanded as Kubernetes does; (name, why) of those left."""
    left: list[tuple[str, str]] = []

    def repl(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        name = m.group(1)
        if name in env.known:
            return env.known[name]
        cluster = name in env.unknown or env.sources or _SERVICE_LINK.match(name)
        left.append((name, "unknown" if cluster else "undefined"))
        return m.group(0)

    return _K8S_VAR.sub(repl, text), left
