"""The JSON Schemas of the native fleet file and of the fleet plan (``kvconfig export
--schema`` writes them beside the deployment's and the plan's)."""

from __future__ import annotations

import json

SCHEMA_IDS = {
    "fleet.schema.json": "urn:kvconfig:schema:fleet:1",
    "fleet-plan.schema.json": "urn:kvconfig:schema:fleet-plan:1",
}


def fleet_schemas() -> dict[str, str]:
    """File name -> JSON Schema text."""
    from schemas.fleet import FleetFile, FleetPlan

    out = {}
    for name, model in (("fleet.schema.json", FleetFile), ("fleet-plan.schema.json", FleetPlan)):
        doc = {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": SCHEMA_IDS[name],
            **model.model_json_schema(by_alias=True),
        }
        out[name] = json.dumps(doc, indent=2, sort_keys=False) + "\n"
    return out
