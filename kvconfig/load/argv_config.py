"""A ``--config`` file's keys as serve words, as vLLM's ``load_config_file`` writes them;
a dotted option's value, as vLLM's ``FlexibleArgumentParser`` reads it."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from kvconfig.errors import InputError
from kvconfig.load import jsontext, yamlfile
from kvconfig.load.argv_result import ArgNote
from kvconfig.load.argv_table import OptionSpec
from kvconfig.mirror.argtypes import human_readable_int


def config_tokens(
    data: Any, table: Mapping[str, OptionSpec], source: str
) -> tuple[list[str], list[ArgNote]]:
    """vLLM's ``load_config_file``: a config mapping (or the YAML document holding it) as
    command-line words. A key the document gives twice keeps its last value, as PyYAML's
    ``safe_load`` keeps it, with a ``duplicate-key`` note."""
    notes: list[ArgNote] = []
    if isinstance(data, yamlfile.Document):
        for key, first, last in data.duplicates:
            said = f"{source}:{last}: {key} is given twice (first on line {first}); vLLM's "
            notes.append(ArgNote("duplicate-key", said + "YAML reader keeps this last value", key))
        data = data.data
    if not isinstance(data, dict):
        raise InputError(
            "the config file is not a mapping of vllm serve options",
            source=source,
            hint="write 'option: value' lines",
        )
    out: list[str] = []
    for key, value in data.items():
        if isinstance(value, bool):
            if value:
                out.append(f"--{key}")
            elif (no_key := f"--no-{key}") in table:
                out.append(no_key)
            else:
                dashed = str(key).replace("_", "-")
                if f"--no-{dashed}" in table:
                    notes.append(
                        ArgNote(
                            "config-value-dropped",
                            f"{source}: vLLM drops '{key}: false': it looks for the option "
                            f"--no-{key}, which does not exist (write '{dashed}: false')",
                            str(key),
                        )
                    )
        elif isinstance(value, list):
            if value:
                out.append(f"--{key}")
                out.extend(str(item) for item in value)
        elif isinstance(value, dict):
            out.extend([f"--{key}", json.dumps(value)])
        else:
            out.extend([f"--{key}", str(value)])
    return out, notes


ConfigReader = Callable[[str], Any]


def _default_reader(base: Path) -> ConfigReader:
    def read(path: str) -> Any:
        full = Path(path) if Path(path).is_absolute() else base / path
        return yamlfile.load(full, path, last_wins=True)  # PyYAML: the last key wins

    return read


def dotted_value(text: str) -> Any:
    """The value of a dotted option (``--kv-transfer-config.kv_role X``) as vLLM reads it:
    JSON, else a human-readable integer (``1k``), else the text."""
    try:
        return jsontext.loads(text)
    except json.JSONDecodeError:
        try:
            return human_readable_int(text)
        except ValueError:
            return text


def merge_dotted(original: dict[str, Any], update: Mapping[str, Any]) -> None:
    """vLLM's ``recursive_dict_update``: mappings merge, lists concatenate, the rest is replaced."""
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(original.get(key), dict):
            merge_dotted(original[key], value)
        elif isinstance(value, list) and isinstance(original.get(key), list):
            original[key] = original[key] + value
        else:
            original[key] = value
