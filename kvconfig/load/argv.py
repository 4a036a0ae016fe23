"""A ``vllm serve`` argument list read the way vLLM's own parser reads it.

vLLM (``vllm/utils/argparse_utils.py``: ``FlexibleArgumentParser.parse_args``)
rewrites the arguments before argparse sees them, and argparse then applies its own
rules. The steps mirrored here, in vLLM's order:

1. ``serve --model M ...``: the first ``--model`` is moved to the front as the
   positional model;
2. ``--config FILE`` (two words, exactly) is replaced by the file's keys, inserted after
   the model and before the other arguments, so the command line wins over the file and
   the file over the defaults. ``--config=FILE`` is not recognised by that step: argparse
   stores it and the file is never read;
3. underscores become dashes in option names (up to the first ``.``); ``-O3`` becomes
   ``--optimization-level 3``;
4. dotted options (``--speculative-config.num_speculative_tokens 3``) are merged into one
   JSON object per option and appended at the end, so they replace an earlier whole value;
5. argparse: unique prefixes stand for the option, the last occurrence wins, options with
   ``nargs='+'`` take every following value, a value with a space that starts with ``-``
   is a positional.

``tests/test_inputs_argv.py`` runs vLLM's real parser on the same arguments. The option
table is data (``kvconfig/mirror/data/vllm-VERSION/argv.json``, written by
``tools/argv.py``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kvconfig._suggest import did_you_mean
from kvconfig.errors import InputError
from kvconfig.load import vllm_rs
from kvconfig.load.argv_config import (
    ConfigReader,
    _default_reader,
    config_tokens,
    dotted_value,
    merge_dotted,
)
from kvconfig.load.argv_legacy import demo_server, fold_speculative, took_boolean
from kvconfig.load.argv_result import COMMAND_LINE, ArgNote, ServeArgs
from kvconfig.load.argv_table import (
    NEVER_AN_OPTION,
    options,
    other_release,
    third_is_not_append,
)
from kvconfig.load.jsontext import RUN_TIME_PART
from kvconfig.mirror import versions
from kvconfig.mirror.argtypes import not_a_choice
from kvconfig.mirror.json_options import known_keys, refusal
from kvconfig.mirror.model_config import DEFAULT_MODEL

__all__ = ["options", "parse_serve_args"]  # options: also read from here (load.serve)

_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")
_MODEL_OPTION = re.compile(r"^--model(=.+|$)")
_SERVED_NAME = re.compile(r"^--served[-_]model[-_]name(=.+|$)")
_CONFIG_OPTION = re.compile(r"^--config(=.+|$)")
_JSON_HINT = "pass one JSON object in single quotes, or a YAML mapping in a config file"


#: A value that still holds a shell expansion (``$(...)``, ``${...}``, ``$name``, backticks)
#: after kvconfig's shell evaluated what it knows (it keeps an expansion it cannot decide,
#: such as a variable set on both sides of an ``if`` on a run-time value, as its source
#: text): its text is only known at run time, so vLLM's JSON parser is not asked about it
#: (the engine's run-time notes handle it).
def _is_option(token: str) -> bool:
    """argparse's test: an option string, not a value (``-1`` and ``-`` are values, and
    so is any text with a space in it)."""
    if not token.startswith("-") or token == "-":
        return False
    if _NEGATIVE_NUMBER.match(token):
        return False
    return " " not in token or "=" in token.split(" ", 1)[0]


def parse_serve_args(
    argv: Sequence[str],
    *,
    version: str = versions.DEFAULT,
    entry: str = "serve",
    read_config: ConfigReader | None = None,
    base: Path | None = None,
    source: str = "<command>",
    written_for: str | None = None,
) -> ServeArgs:
    """The options vLLM's parser takes from ``argv`` (the words after ``vllm serve``).

    ``entry`` is ``serve`` (``vllm serve``: positional model, ``--model`` moved to the
    front), ``api_server`` (the OpenAI server and launchers that hand the words to vLLM's
    engine parser: ``--model`` is an option) or ``demo_api_server`` (``demo_server``).
    ``read_config`` returns the data of a ``--config`` file (default: the YAML file, relative
    to ``base``). Raises InputError where vLLM would refuse the arguments.

    ``written_for`` names the release the words were written for when ``version``'s table is
    another's (``kvconfig.load.engine_options.written_for``): an option or value that table
    refuses may be one that release took: left out with an ``other-release`` note.
    """
    if entry == "vllm-rs":  # the Rust frontend: the words its managed engine is given
        argv, entry = vllm_rs.python_args(argv, version), "serve"
    if entry == "demo_api_server":
        demo_server(version, written_for, source)
    table = options(version)
    notes: list[ArgNote] = []

    def err(message: str, key: str = "", hint: str = "") -> InputError:
        return InputError(message, source=source, key=key, hint=hint)

    words: list[tuple[str, str]] = [(w, COMMAND_LINE) for w in argv]
    serve = entry == "serve"
    if serve:
        at = next((i for i, (w, _) in enumerate(words) if _MODEL_OPTION.match(w)), None)
        if at is not None:
            word = words[at][0]
            if word == "--model":
                if at + 1 >= len(words):
                    raise err("needs a value", "--model", "e.g. --model Qwen/Qwen3-8B")
                tag, rest = words[at + 1], at + 2
            else:
                tag, rest = (word.removeprefix("--model="), COMMAND_LINE), at + 1
            words = [tag, *words[:at], *words[rest:]]
        if (
            words
            and words[0][0].startswith("-")
            and not any(_CONFIG_OPTION.match(w) for w, _ in words)
            and any(_SERVED_NAME.match(w) for w, _ in words)
        ):
            raise err(
                "vLLM refuses --served-model-name without a model as the first argument",
                "--served-model-name",
                "put the model first: vllm serve MODEL --served-model-name NAME",
            )
    config_path: str | None = None
    plain = [w for w, _ in words]
    if "--config" in plain:
        if plain.count("--config") > 1:
            raise err("given more than once; vLLM reads one config file", "--config")
        index = plain.index("--config")
        if index == len(plain) - 1:
            raise err("needs a file", "--config", "e.g. --config serve.yaml")
        config_path = plain[index + 1]
        if config_path.split(".")[-1] not in ("yaml", "yml"):
            raise err(
                f"vLLM reads only .yaml or .yml config files, got {config_path!r}",
                "--config",
                "rename the file to .yaml",
            )
        reader = read_config or _default_reader(base or Path.cwd())
        extra, dropped = config_tokens(reader(config_path), table, config_path)
        notes.extend(dropped)
        pulled = [(w, config_path) for w in extra]
        others = [*words[:index], *words[index + 2 :]]
        if not serve:
            words = pulled + others
        else:
            model_in_cli = bool(others) and not others[0][0].startswith("-")
            if not model_in_cli and "--model" not in extra:
                raise err(
                    "no model given, on the command line or in the config file",
                    "model",
                    "vllm serve MODEL --config FILE, or 'model: ...' in the file",
                )
            words = [*others[:1], *pulled, *others[1:]] if model_in_cli else [*pulled, *others]
    for w, _ in words:
        if w.startswith("--config="):
            notes.append(
                ArgNote(
                    "config-equals-ignored",
                    f"vLLM ignores {w}: it reads a config file only from "
                    "'--config FILE' (two words), so the file's options never arrive "
                    "(vLLM issue #43252)",
                    "--config",
                )
            )

    # underscores to dashes in option names; -O3 to --optimization-level 3
    processed: list[tuple[str, str]] = []
    for i, (w, origin) in enumerate(words):
        if w.startswith("--"):
            key, eq, value = w.partition("=")
            head, dot, tail = key[2:].partition(".")
            processed.append((f"--{head.replace('_', '-')}{dot}{tail}{eq}{value}", origin))
        elif w.startswith("-O") and w != "-O":
            level = w[3:] if w[2] == "=" else w[2:]
            processed += [("--optimization-level", origin), (level, origin)]
        elif w == "-O" and i + 1 < len(words) and words[i + 1][0] in ("0", "1", "2", "3"):
            processed.append(("--optimization-level", origin))
        else:
            processed.append((w, origin))

    # dotted options, merged per option and appended as JSON
    dotted: dict[str, dict[str, Any]] = {}
    dotted_origin: dict[str, str] = {}
    skip: set[int] = set()
    for i, (w, origin) in enumerate(processed):
        if i in skip or not w.startswith("-") or "." not in w:
            continue
        if "=" in w:
            name, value = w.split("=", 1)
            if "." not in name:
                continue
        else:
            if i + 1 >= len(processed):
                raise err("needs a value", w, f"e.g. {w} VALUE")
            name, value = w, processed[i + 1][0]
            skip.add(i + 1)
        parsed: Any
        if name.endswith("+"):
            name = name[:-1]
            parsed = value.split(",")
        else:
            parsed = dotted_value(value)
        head, *keys = name.split(".")
        nested: Any = parsed
        for key in reversed(keys):
            nested = {key: nested}
        merge_dotted(dotted.setdefault(head, {}), nested)
        if dotted_origin.get(head) != COMMAND_LINE:
            dotted_origin[head] = origin
        skip.add(i)
    tokens = [p for i, p in enumerate(processed) if i not in skip]
    for head, merged in dotted.items():
        tokens += [(head, dotted_origin[head]), (json.dumps(merged), dotted_origin[head])]
    tokens, folded = fold_speculative(tokens, written_for)  # a release before 0.9's draft
    notes.extend(folded)

    # argparse
    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    seen: dict[str, list[tuple[str, str]]] = {}
    positionals: list[tuple[str, str]] = []
    i = 0
    only_positionals = False
    while i < len(tokens):
        w, origin = tokens[i]
        i += 1
        if only_positionals or not _is_option(w):
            positionals.append((w, origin))
            continue
        if w == "--":
            only_positionals = True
            continue
        name, eq, inline = w.partition("=") if w.startswith("--") or "=" in w else (w, "", "")
        spec = table.get(name)
        if spec is None and name.startswith("--"):
            matches = sorted(o for o in table if o.startswith(name))
            if len(matches) > 1:
                shown = ", ".join(matches[:5]) + (", ..." if len(matches) > 5 else "")
                raise err(f"ambiguous option: {name} could match {shown}", name)
            if len(matches) == 1:
                notes.append(ArgNote("abbreviated", f"vLLM reads {name} as {matches[0]}", name))
                name, spec = matches[0], table[matches[0]]
        if spec is None and written_for is not None and not NEVER_AN_OPTION.search(name):
            valued = i < len(tokens) and not _is_option(tokens[i][0]) and not eq
            value = f" and its value {tokens[i][0]!r}" if valued else ""
            i += valued
            notes.append(
                ArgNote("other-release", other_release(name, version, written_for, value), name)
            )
            continue
        if spec is None:
            longs = [o for o in table if o.startswith("--") and not o.startswith("--no-")]
            raise err(
                f"unknown vLLM {version} option {name!r}",
                name,
                did_you_mean(name, longs) or "see 'vllm serve --help'",
            )
        dest, nargs, third = spec
        stored: Any
        if nargs == "0":
            took = eq or took_boolean(name, tokens[i][0] if i < len(tokens) else "", written_for)
            if took and written_for is not None:  # a flag that took a value in another release
                value, i = (inline, i) if eq else (tokens[i][0], i + 1)
                said = f" {value!r} (vLLM {version}'s {name} takes no value)"
                notes.append(
                    ArgNote("other-release", other_release(name, version, written_for, said), name)
                )
                continue
            if eq:
                raise err(f"{name} takes no value, got {inline!r}", name, f"write {name} alone")
            stored = third
        elif nargs in ("1", "?"):
            if eq:
                stored = inline
            elif i < len(tokens) and not _is_option(tokens[i][0]):
                stored = tokens[i][0]
                i += 1
            elif nargs == "?":
                stored = third
            else:
                raise err("needs a value", name, f"e.g. {name} VALUE")
        else:  # "+": every following value
            taken = [inline] if eq else []
            while i < len(tokens) and not _is_option(tokens[i][0]):
                taken.append(tokens[i][0])
                i += 1
            if not taken:
                raise err("needs at least one value", name, f"e.g. {name} VALUE")
            stored = taken
        if (
            isinstance(stored, str)
            and not RUN_TIME_PART.search(stored)
            and (problem := refusal(dest, stored, version) or not_a_choice(dest, stored, version))
        ):
            kept = known_keys(dest, stored, version) if written_for is not None else None
            if written_for is not None and kept is not None:
                stored, unknown = kept  # the keys that release's dataclass had go
                said = f" key {', '.join(repr(k) for k in unknown)}"
                notes.append(
                    ArgNote("other-release", other_release(name, version, written_for, said), name)
                )
            elif written_for is not None and not problem.startswith("invalid JSON"):
                # (text that is no JSON at all is refused for every release: each reads
                # these options with json.loads)
                said = f" {stored!r} (vLLM {version} refuses it: {problem})"
                note = other_release(name, version, written_for, said)
                notes.append(ArgNote("other-release", note, name))
                continue
            else:
                hint = "use one of them" if problem.startswith("invalid c") else _JSON_HINT
                raise err(f"vLLM's parser refuses this value: {problem}", name, hint)
        key = dest.replace("_", "-")
        if third == "append":
            values[key] = [*values.get(key, []), stored]
        else:
            values[key] = stored
        origins[key] = origin
        seen.setdefault(key, []).append((name, origin))

    model: str | None = None
    for word, _ in positionals[1:]:
        if RUN_TIME_PART.search(word):  # no word at all, or options: $EXTRA, "${ARGS[@]}"
            said = f"{word} is only known at run time and may hold more vLLM arguments"
            notes.append(ArgNote("runtime-arguments", said, word))
    positionals[1:] = [(w, o) for w, o in positionals[1:] if not RUN_TIME_PART.search(w)]
    if positionals:
        first, origin = positionals[0]
        if len(positionals) > 1:
            extra_word = positionals[1][0]
            hint = "vllm serve takes one model; options start with --"
            if extra_word.startswith("-") and " " in extra_word:
                hint = (
                    f"{extra_word!r} is one argument with a space in it: split it in two, "
                    f"or write {extra_word.split(' ', 1)[0]}=VALUE"
                )
            raise err(f"vLLM refuses unrecognized arguments: {extra_word}", "", hint)
        if serve:
            model = first
            origins["model"] = origin
        else:
            notes.append(
                ArgNote(
                    "model-tag-ignored",
                    f"the positional {first!r} is not read by this entry point; it serves --model",
                    first,
                )
            )
    if model is None and isinstance(values.get("model"), str):
        model = values["model"]
    if model is None:
        # argparse keeps EngineArgs.model's default (a --config without a model was
        # refused above), so the engine loads vLLM's default model
        model = DEFAULT_MODEL
        notes.append(
            ArgNote("default-model", f"no model given: vLLM serves {DEFAULT_MODEL}", "model")
        )
    dotted_dests = {table[h][0].replace("_", "-") for h in dotted if h in table}
    for key, occurrences in seen.items():
        cli = [name for name, origin in occurrences if origin == COMMAND_LINE]
        if key in dotted_dests and len(occurrences) > 1:
            notes.append(
                ArgNote(
                    "dotted-replaces",
                    f"the dotted --{key}.* options replace the whole --{key} given "
                    "before them: vLLM appends them as a new value and the last "
                    "value wins",
                    f"--{key}",
                )
            )
        elif len(cli) > 1 and third_is_not_append(table, occurrences[0][0]):
            notes.append(
                ArgNote(
                    "repeated",
                    f"--{key} is given {len(cli)} times; vLLM uses the last",
                    f"--{key}",
                )
            )
    return ServeArgs(
        model=model,
        values=values,
        origins=origins,
        config=config_path,
        notes=tuple(notes),
        tokens=tuple(w for w, _ in tokens),
    )
