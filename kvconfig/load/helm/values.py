"""A chart's values as its Go templates see them: printed values, truth, lines of keys."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvconfig.errors import InputError
from kvconfig.load import yamlfile as _yaml


def _go(value: Any) -> str:
    """A value as Go's template ``quote`` prints it."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e21 else repr(value)
    return str(value)


def _truthy(value: Any) -> bool:
    """Go templates' truth: false, 0, nil and empty strings, lists and maps are false."""
    return bool(value)


class _Values:
    """A values file with the line of each key."""

    def __init__(self, doc: _yaml.Document) -> None:
        self.doc = doc

    def err(self, message: str, path: tuple[str | int, ...], key: str, hint: str) -> InputError:
        return InputError(
            message, source=self.doc.source, line=self.doc.line(*path), key=key, hint=hint
        )


class _ValuesShim:
    """A synthetic pod spec whose lines are those of a values file entry."""

    def __init__(
        self,
        doc: _yaml.Document,
        path: tuple[str | int, ...],
        pod_spec: dict[str, Any],
        given: Mapping[str, str] | None = None,
    ) -> None:
        self.doc = doc
        self.path = path
        self.data = pod_spec
        self.source = doc.source
        self.given = dict(given or {})

    def line(self, *path: str | int) -> int | None:
        return self.doc.line(*self.path)

    def err(self, message: str, path: Any, key: str, hint: str) -> InputError:
        return InputError(message, source=self.source, line=self.line(), key=key, hint=hint)
