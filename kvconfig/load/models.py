"""Reading a model's ``config.json``: from a local folder, or for a Hugging Face id from
the local cache (or the Hub, with ``--download``).

A folder is read as vLLM's ``--model`` would be; ``--model-path PATTERN=DIR`` (and an
operator file's bind mounts) map the paths a manifest uses to folders here; a Hub id is
resolved by ``kvconfig.load.hub`` (the cache by default). The file is read safely (a
regular file, at most ``MAX_CONFIG_BYTES``, UTF-8, one JSON object) and becomes a
``kvconfig.derive.Model``.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from kvconfig.derive.inputs import Model
from kvconfig.errors import InputError, describe
from kvconfig.load import jsontext
from kvconfig.load.serve import Options
from kvconfig.load.yamlfile import decode, read_bytes

MAX_CONFIG_BYTES = 4 * 1024 * 1024
"""``config.json`` files larger than this are refused (real ones are a few KiB)."""


_OBJECT_STORE = re.compile(r"^(s3|gs|az)://[^/]")
"""A model in an object store, as vLLM's ``is_runai_obj_uri`` tells it."""


def read_model(path: Path, source: str, key: str) -> Model:
    """The ``config.json`` of a local model folder (or the file itself)."""
    cfg_path = path / "config.json" if path.is_dir() else path
    if not cfg_path.exists():
        raise InputError(
            f"no config.json in {path}",
            source=source,
            key=key,
            hint="point it at a folder holding the model's Hugging Face config.json",
        )
    raw = read_bytes(cfg_path, str(cfg_path), MAX_CONFIG_BYTES, what="config.json")
    text = decode(raw, str(cfg_path), what="config.json")
    try:
        data = jsontext.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(
            f"invalid JSON: {err.msg} at column {err.colno}",
            source=str(cfg_path),
            line=err.lineno,
            hint="fix the JSON syntax",
        ) from None
    except (RecursionError, ValueError) as err:
        why = "nested too deeply" if isinstance(err, RecursionError) else str(err)
        raise InputError(
            f"invalid JSON: {why}", source=str(cfg_path), hint="fix config.json"
        ) from None
    if not isinstance(data, dict):
        raise InputError(
            "expected a JSON object at the top level",
            source=str(cfg_path),
            hint="a Hugging Face config.json is one JSON object",
        )
    return Model(str(cfg_path), data)


def model_at(opts: Options, key: str, value: Any, revision: Any = None) -> Model:
    """The model a serve option names, its errors located at that option; ``revision``
    is the Hub revision of an id (``--revision``, ``speculative-config.revision``)."""
    return read_model_at(opts, model_folder(opts, key, value, revision), key)


_MODEL_URI = re.compile(r"^hf://([^/?#]+/[^/?#]+)")


KUBEAI_UID_VAR = "KUBEAI_MODEL_UID"
"""The variable that stands for a KubeAI Model's UID in a cache profile's model path."""
KUBEAI_URL = re.compile(r"^([a-z0-9]+)://([^?]+)(\?.*)?$")
"""A KubeAI Model's ``url`` (``SCHEME://REF``, the controller's ``parseModelURL``)."""


def loaded_copy(value: str, model_uri: str | None) -> str | None:
    """The Hugging Face id whose files an operator's loader put at the path ``value``,
    when ``model_uri`` is that ``hf://`` model: KubeAI's cache loader job copies the
    Model's ``url`` into ``/models/NAME-UID`` (``modelCacheDir`` and the loader's
    arguments, ``internal/modelcontroller/cache.go``: only the path waits on the UID), and
    llmaz's model loader downloads an ``OpenModel``'s Hub id into
    ``/workspace/models/models--ORG--NAME`` (``modelsource/modelhub.go``). None for any
    other path or URL."""
    uri = _MODEL_URI.match(model_uri or "")
    if uri is None:
        return None
    hub_id = uri.group(1)
    if value.startswith("/models/") and value.endswith(f"-$({KUBEAI_UID_VAR})"):
        return hub_id
    if value == "/workspace/models/models--" + hub_id.replace("/", "--"):
        return hub_id
    return None


def model_folder(opts: Options, key: str, value: Any, revision: Any = None) -> Path:
    """The folder a model option names: a local path, a path ``--model-path`` maps, or a
    Hugging Face id (the local cache; the Hub with ``--download``)."""
    if not isinstance(value, str) or not value.strip():
        raise opts.err(
            key, f"expected the model's folder, got {describe(value)}", "e.g. model: ./qwen3-8b"
        )
    path = Path(os.path.expanduser(value))
    if not path.is_absolute():
        path = opts.base / path
    _usable(opts, key, path, value)
    if path.is_file() and path.name != "config.json":
        raise opts.err(
            key,
            f"{value!r} is a file, not a model folder",
            "point it at the folder that holds the model's config.json",
        )
    if path.exists():
        from kvconfig.load import roots

        if not roots.inside(path, opts.base):
            raise opts.err(
                key,
                f"{value!r} lies outside the repository; kvconfig does not read it",
                "allow its folder with --allow-path DIR, or map it with --model-path PATTERN=DIR",
            )
        return _short(path)
    names = [value]
    # KServe downloads hf://ID into /mnt/models, and spec.speculator's model into
    # /mnt/speculator/model (constants.DefaultModelLocalMountPath and
    # DefaultSpeculatorLocalMountPath, kserve/kserve pkg/constants/constants.go)
    for mount, given in (("/mnt/models", opts.model_uri),
                         ("/mnt/speculator/model", opts.speculator_uri)):  # fmt: skip
        uri = _MODEL_URI.match(given or "")
        if uri is not None and (value == mount or value.startswith(mount + "/")):
            names.append(uri.group(1))
    if (cached := loaded_copy(value, opts.model_uri)) is not None:
        names.append(cached)  # an operator's loader put the model there (KubeAI, llmaz)
    for name in names:
        rule = opts.model_paths.rule(name) if opts.model_paths is not None else None
        if rule is None:
            continue
        pattern, mapped = rule
        _usable(opts, key, mapped, value)
        if mapped.exists():
            return _short(mapped)
        if opts.model_paths is not None and pattern in opts.model_paths.mounts:
            from kvconfig.errors import ModelUnavailable

            raise ModelUnavailable(
                f"model {name!r} lies in the bind mount of {pattern} ({mapped} here), which "
                "is not here: it is filled when the container runs, so kvconfig cannot tell "
                "the plan",
                source=opts.source,
                line=opts.lines.get(key.split(".", maxsplit=1)[0]),
                key=key,
                hint="put the model's config.json there, or map it with --model-path PATTERN=DIR",
            )
        raise opts.err(
            key,
            f"{name!r} maps to {mapped} (--model-path), which does not exist",
            "check the DIR of --model-path PATTERN=DIR",
        )
    value = names[-1]
    from kvconfig.errors import ModelUnavailable
    from kvconfig.load import hub

    if _OBJECT_STORE.match(value):
        # vLLM pulls the config of an s3://, gs:// or az:// model from the bucket when it
        # starts (ModelConfig, is_runai_obj_uri: the Run:ai streamer's object stores)
        raise ModelUnavailable(
            f"model {value!r} is in an object store: vLLM reads its config.json there when "
            "it starts, so kvconfig cannot tell the plan",
            source=opts.source,
            line=opts.lines.get(key.split(".", maxsplit=1)[0]),
            key=key,
            hint="map it to a local folder holding its config.json with --model-path PATTERN=DIR",
        )

    if hub.is_hub_id(value):
        return hub.resolve(
            value,
            revision=revision if isinstance(revision, str) and revision else None,
            download=opts.download,
            source=opts.source,
            line=opts.lines.get(key.split(".", maxsplit=1)[0]),
            key=key,
        )
    located = opts.err(
        key,
        f"{value!r} is neither a local folder nor a Hugging Face model id",
        "point it at a folder with the model's config.json, or map the path to one with "
        "--model-path PATTERN=DIR",
    )
    if not os.path.isabs(os.path.expanduser(value)):
        raise located  # relative to the file: a folder that should be here
    # an absolute path names the serving machine's (or pod's) folder: cannot tell here
    raise ModelUnavailable(
        located.message,
        source=located.source,
        line=located.line,
        key=located.key,
        hint=located.hint,
    )


def _usable(opts: Options, key: str, path: Path, value: str) -> None:
    """InputError at ``key`` when ``path`` (``value``, or where ``--model-path`` maps it)
    cannot even be looked up: a name too long, a NUL byte."""
    try:
        path.exists()
    except (OSError, ValueError) as err:
        why = err.strerror if isinstance(err, OSError) else str(err)
        raise opts.err(
            key, f"{describe(value)} is not a usable path ({why})", "e.g. model: ./qwen3-8b"
        ) from None


def read_model_at(opts: Options, path: Path, key: str) -> Model:
    """``read_model``, its errors located at the option that named the folder."""
    try:
        return read_model(path, opts.source, key)
    except InputError as err:
        raise err.located(opts.source, opts.lines.get(key.split(".", maxsplit=1)[0])) from None


def _short(path: Path) -> Path:
    """``path`` relative to the working folder when it lies below it (for messages)."""
    path = Path(os.path.normpath(path))
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path
