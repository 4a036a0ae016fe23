"""Retyped inputs: a YAML seed with one of its values replaced by a value of another type.

A mapping or a list becomes a number, a string, a boolean, null or an empty one; a scalar
becomes a list or a mapping: the slip a hand edit or a template makes (``args: true``,
``env: 5``, ``replicas: {a: 1}``). Kubernetes, compose and Helm refuse most such files;
kvconfig must read each or refuse it in one line, never fail inside. The value is chosen
among every node of the seed, so the deep fields of every reader are reached (a mutated
input mostly stops at the parser; a generated one edits the seed's top levels most). Each
input runs through ``Workspace.run`` with the same checks as the others.
"""

from __future__ import annotations

import pickle
import random
from collections.abc import Callable, Iterator
from typing import Any

import yaml

from tests.fuzz.contract import Tally, Workspace
from tests.fuzz.generated import _documents

#: Formats whose inputs are not YAML documents (a script, a pasted command, TOML), though
#: YAML may parse some of their text.
NOT_YAML = frozenset({"script", "command", "repo"})

#: What a node becomes: values of every YAML type, a 64-bit overflow and a negative number.
OTHERS: tuple[Any, ...] = (5, "x", True, None, [], {}, 2**63, -1, [1], {"a": 1})


def _paths(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """The path of every node below ``node``."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(
        node, list
    ) else ()  # fmt: skip
    for key, value in items:
        yield (*path, key)
        yield from _paths(value, (*path, key))


def _usable(seed: bytes) -> bool:
    try:
        return any(isinstance(d, (dict, list)) for d in pickle.loads(_documents(seed)))
    except (yaml.YAMLError, ValueError, TypeError):
        return False


def retype(seed: bytes, rng: random.Random) -> bytes:
    """``seed`` with one node replaced by a value of another type."""
    docs = pickle.loads(_documents(seed))
    paths = [(d, p) for d, doc in enumerate(docs) for p in _paths(doc)]
    d, path = rng.choice(paths)
    node = docs[d]
    for key in path[:-1]:
        node = node[key]
    old = node[path[-1]]
    node[path[-1]] = rng.choice([v for v in OTHERS if type(v) is not type(old)])
    return yaml.dump_all(docs, Dumper=yaml.CSafeDumper, sort_keys=False).encode(
        "utf-8", "surrogatepass"
    )


def retyped(
    work: Workspace,
    fmt: str,
    count: int,
    seed: int = 0,
    *,
    progress: Callable[[Tally], None] | None = None,
) -> Tally:
    """``count`` retyped inputs of ``fmt`` (seeded by ``seed``), tallied; none for a format
    whose seeds are not YAML documents (scripts, pasted commands, TOML)."""
    rng = random.Random(f"retyped-{fmt}-{seed}")
    seeds = work.seeds[fmt]
    usable = [i for i, s in enumerate(seeds) if fmt not in NOT_YAML and _usable(s)]
    tally = Tally()
    for i in range(count if usable else 0):
        index = rng.choice(usable)
        work.run(fmt, retype(seeds[index], rng), index, tally)
        if progress is not None and (i + 1) % 1000 == 0:
            progress(tally)
    return tally
