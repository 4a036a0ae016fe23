"""What vLLM's parser makes of a serve argument list (``ServeArgs``), and its notes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple


class ArgNote(NamedTuple):
    """Something vLLM does with the arguments that their text does not show."""

    kind: str
    """``config-equals-ignored``, ``dotted-replaces``, ``config-value-dropped``,
    ``repeated``, ``abbreviated``, ``model-tag-ignored``, ``default-model`` (no model
    given: vLLM's default one), ``other-release`` (an option or value the table of the
    release kvconfig reads with refuses, written for another) or ``runtime-arguments``
    (a word after the model only known at run time, which may hold more arguments)."""
    message: str
    """One sentence, for the report."""
    key: str = ""
    """The option concerned, as written."""


class ServeArgs(NamedTuple):
    """What vLLM's parser makes of a serve argument list."""

    model: str | None
    """The model vLLM serves (positional, first ``--model``, the config file's, or else
    vLLM's default model)."""
    values: Mapping[str, Any]
    """Destination (dashes, e.g. ``block-size``) to the value argparse stores: the text
    of the last occurrence, True/False for flags, a list for ``nargs='+'`` options and
    appended options. JSON options hold their JSON text."""
    origins: Mapping[str, str]
    """Destination to where its value came from: ``command line`` or the config file."""
    config: str | None
    """The config file that was read, as written."""
    notes: tuple[ArgNote, ...]
    """What the arguments do not say by themselves (see ``ArgNote.kind``)."""
    tokens: tuple[str, ...]
    """The argument list argparse receives, after vLLM's rewriting."""


COMMAND_LINE = "command line"
