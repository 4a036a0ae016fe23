"""KubeRay ``RayService``: the Ray Serve applications of ``spec.serveConfigV2``.

KubeRay starts the Ray cluster of ``spec.rayClusterConfig`` (head and worker pods that run
``ray start``, not vLLM) and hands ``spec.serveConfigV2``, a Serve config written as one
YAML string, to the cluster's Serve API: ``updateServeDeployment`` unmarshals it as YAML
and PUTs it as JSON to ``/api/serve/applications/``
(ray-project/kuberay ``ray-operator/controllers/ray/rayservice_controller.go``; the field
is ``RayServiceSpec.ServeConfigV2`` in ``ray-operator/apis/ray/v1/rayservice_types.go``).
The vLLM engines are therefore the ``LLMConfig`` entries of that config, read as any Ray
Serve config (``kvconfig.load.rayserve``). A RayService whose applications list no LLM
config (a custom ``import_path``) starts no engine kvconfig can read.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from kvconfig.errors import InputError
from kvconfig.load import yamlfile as _yaml
from kvconfig.load.engine_fields import mapping

if TYPE_CHECKING:
    from kvconfig.load.kubernetes.resources import Found, Resource
    from kvconfig.load.operator_engine import Engine


def has_serve_config(res: Resource) -> bool:
    """Whether a ``RayService`` carries a ``serveConfigV2`` (else its pods are read)."""
    return isinstance(mapping(res.data.get("spec")).get("serveConfigV2"), str)


def engines(
    res: Resource, base: Path, found: list[Found], block_lines: frozenset[int]
) -> list[Engine]:
    """The engines of a ``RayService``'s ``spec.serveConfigV2``."""
    from kvconfig.load import rayserve
    from kvconfig.load.kubernetes.resources import Found

    name = str(mapping(res.data.get("metadata")).get("name") or "unnamed")
    text = str(res.data["spec"]["serveConfigV2"])
    line = res.line("spec", "serveConfigV2")
    # a literal block scalar keeps the file's lines (its line k is the file's line + k):
    # parsed below as many empty lines, the config's lines are the file's
    literal = line is not None and line in block_lines
    try:
        padded = "\n" * (line or 0) + text if literal else text
        parsed = _yaml.parse(padded, res.source) if text.strip() else None
    except InputError as err:
        raise InputError(
            err.message,
            source=res.source,
            line=err.line if literal else line,
            key="spec.serveConfigV2",
            hint=err.hint,
        ) from None
    if parsed is None or not isinstance(parsed.data, dict):
        raise InputError(
            "spec.serveConfigV2: expected a Ray Serve config (applications: [...]) as YAML text",
            source=res.source,
            line=line,
            key="spec.serveConfigV2",
            hint="write serveConfigV2: | followed by the Serve config",
        )
    lines = {p: (n if literal else line or 1) for p, n in parsed.lines.items()}
    doc = _yaml.Document(res.source, parsed.data, lines)
    try:
        read = rayserve.engines(doc, base)
    except InputError as err:
        if err.source != res.source:  # an LLMConfig file it names
            raise
        if not err.message.startswith(rayserve.NO_LLM_CONFIG):
            key = f"spec.serveConfigV2: {err.key}" if err.key else "spec.serveConfigV2"
            raise InputError(
                err.message, source=err.source, line=err.line, key=key, hint=err.hint
            ) from None
        apps = parsed.data.get("applications")
        paths = [
            str(a.get("import_path")) for a in apps if isinstance(a, dict) and a.get("import_path")
        ] if isinstance(apps, list) else []  # fmt: skip
        runs = (
            f"the Serve application {paths[0]}" if paths else "a Serve config without LLM configs"
        )
        found.append(Found(f"RayService/{name}", runs, line))
        return []
    prefix = "rayserve/"
    return [replace(e, name=f"RayService/{name}/" + e.name.removeprefix(prefix)) for e in read]
