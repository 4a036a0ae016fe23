"""kvconfig's Python API: everything the command line does, as objects (docs/api.md).

The API and the command line run one pipeline (``kvconfig.cli.outcomes``): the same
reader of every input, the same loader, the same offline resolver and the same pool of
vLLM start-ups. Each keyword is a command-line option (``engine_timeout`` is
``--engine-timeout``, ``model_path`` the list of ``--model-path`` values, and so on).

* ``load``: the deployments a file or command holds (one per engine of an operator file),
  with the loader's notices and what was read.
* ``plan`` and ``lint``: one ``Outcome`` per deployment and platform, planned offline, by
  vLLM's own start-up (``engine="vllm"``) or both; ``report`` renders them as the CLI
  does, ``exit_code`` gives the CLI's code.
* ``plan_fleet``: a fleet's ``schemas.fleet_plan.FleetPlan``.
* ``explain``, ``export``, ``schemas``, ``catalog``, ``diff``: the other commands.
* ``load_deployment`` and ``resolve``: one deployment and its typed ``schemas.plan.Plan``.

Only ``kvconfig.errors.KVConfigError`` (and its subclasses) leaves these functions: bad
input is an ``InputError``, a model kvconfig cannot derive (``load_deployment``) an
``UnsupportedArchitecture``; anything else is wrapped as a ``KVConfigError`` naming it.

>>> dep = load_deployment("examples/qwen3-8b-eagle3-gh200-triton-128.yaml", platform="gh200")
>>> plan = resolve(dep)
>>> plan.verdict
'reject'
"""

from __future__ import annotations

from kvconfig.api._options import FORMATS
from kvconfig.api.commands import catalog, diff, explain, export, json_schemas, plan_fleet
from kvconfig.api.deployments import (
    Input,
    exit_code,
    lint,
    load_deployment,
    load_engines,
    plan_deployments,
    render,
    resolve,
    typed,
)

__all__ = [
    "FORMATS",
    "Input",
    "catalog",
    "diff",
    "exit_code",
    "explain",
    "export",
    "json_schemas",
    "lint",
    "load_deployment",
    "load_engines",
    "plan_deployments",
    "plan_fleet",
    "render",
    "resolve",
    "typed",
]
