"""The one strict base every kvconfig schema derives from."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from kvconfig.schemas.sizes import MultipleOf


class Strict(BaseModel):
    """Frozen, closed pydantic model: unknown keys are errors, values never change."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        use_attribute_docstrings=True,
        validate_default=False,
        populate_by_name=True,
        serialize_by_alias=True,
    )


KernelSizeField = Annotated[int, Field(ge=1, strict=True)] | MultipleOf
"""A kernel size in a schema: a strict positive int (no booleans) or a MultipleOf."""
