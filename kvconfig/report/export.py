"""``kvconfig export``: a plan as a JSON file, or the JSON Schemas of the file formats."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from kvconfig.errors import InputError
from kvconfig.report.json import render_json
from kvconfig.report.outcome import Outcome


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file: readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        # mkstemp creates 0600; give the file the mode a plain open() would (umask applies)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


#: ``$id`` of each schema: a stable name per file format and version (not a download address).
SCHEMA_IDS = {
    "deployment.schema.json": "urn:kvconfig:schema:deployment:1",
    "plan.schema.json": "urn:kvconfig:schema:plan:1",
    "fleet.schema.json": "urn:kvconfig:schema:fleet:1",
    "fleet-plan.schema.json": "urn:kvconfig:schema:fleet-plan:1",
    "repo-config.schema.json": "urn:kvconfig:schema:repo-config:1",
}


def schemas() -> dict[str, str]:
    """File name -> JSON Schema text of the native deployment file, the plan, the native
    fleet file, the fleet plan (docs/fleets.md) and the repository configuration
    (docs/inputs.md).

    The deployment schema describes the file as written: ``kvconfig: 1`` is required
    there, because it is how kvconfig tells a native file from a vllm serve config.
    """
    from kvconfig.load.validate import json_schema
    from kvconfig.schemas.fleet import FleetFile
    from kvconfig.schemas.fleet_plan import FleetPlan
    from kvconfig.schemas.plan import Plan
    from kvconfig.schemas.repo_config import RepoConfig

    deployment = json_schema()
    deployment["required"] = ["kvconfig", *deployment.get("required", [])]
    out = {}
    for name, body in (
        ("deployment.schema.json", deployment),
        ("plan.schema.json", Plan.model_json_schema(by_alias=True)),
        ("fleet.schema.json", FleetFile.model_json_schema(by_alias=True)),
        ("fleet-plan.schema.json", FleetPlan.model_json_schema(by_alias=True)),
        ("repo-config.schema.json", RepoConfig.model_json_schema(by_alias=True)),
    ):
        doc = {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": SCHEMA_IDS[name],
            **body,
        }
        out[name] = json.dumps(doc, indent=2, sort_keys=False) + "\n"
    return out


def export_schemas(output: str | None) -> str:
    """Write the schemas to a folder (or print them as one JSON object)."""
    docs = schemas()
    if output is None:
        return json.dumps({k: json.loads(v) for k, v in docs.items()}, indent=2) + "\n"
    folder = Path(output)
    if folder.exists() and not folder.is_dir():
        raise InputError(
            "not a folder", source=output, key="--output", hint="--schema writes a folder"
        )
    for name, text in docs.items():
        atomic_write(folder / name, text)
    return "".join(f"wrote {folder / name}\n" for name in docs)


def export_plan(outcomes: Sequence[Outcome], output: str | None) -> tuple[str, int]:
    """Write the plan JSON (to ``output`` atomically, or to stdout)."""
    from kvconfig.secrets import redact

    text = redact(render_json(outcomes))
    code = 1 if any(o.verdict == "reject" for o in outcomes) else 0
    if output is None:
        return text, code
    atomic_write(Path(output), text)
    return f"wrote {output}\n", code
