"""Field constraints pydantic reads, written without importing pydantic.

``schemas.deployment`` is read on ``kvconfig lint``'s path, which must start fast, so its
classes are plain frozen dataclasses. These markers sit in their ``Annotated`` field
types: pydantic asks each for its part of the schema (``__get_pydantic_core_schema__``)
only when it validates a document, and imports ``pydantic_core`` then.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CONFIG: dict[str, Any] = {
    "extra": "forbid",
    "use_attribute_docstrings": True,
}
"""The pydantic configuration of every ``schemas.deployment`` class (``__pydantic_config__``):
unknown keys are errors, the docstring under each field is its description."""


@dataclass(frozen=True, slots=True)
class StrictInt:
    """An integer, never a boolean, a string or a float, at least ``ge`` when given."""

    ge: int | None = None

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        return core_schema.int_schema(strict=True, ge=self.ge)


@dataclass(frozen=True, slots=True)
class MinItems:
    """A list with at least ``count`` entries."""

    count: int

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        schema = dict(handler(source))
        schema["min_length"] = self.count
        return schema
