"""kvcached's controller configs: the vLLM servers ``controller/launch.py --config FILE``
starts, one per instance, each in a tmux session of its own (ovg-project/kvcached
``controller/launch.py``, ``controller/utils.py``).

``kvconfig.load.documents.kind_of`` knows the file by an ``instances`` list whose entries
name a ``model`` and an ``engine``. The controller:

* refuses a config without an ``instances`` list, an instance that is no mapping or lacks
  ``model`` or ``engine``, an ``engine_env``/``kvcached_env`` that is no list, and
  ``using_venv`` without ``venv_path`` (``_parse_cfg``, before it starts anything); at the
  launch of an instance whose engine is not ``vllm``, ``sgl`` or ``sglang``, or one of
  whose env entries has no ``=``, it raises, and that instance and the ones after it never
  start (``_build_command``, ``collect_env_mods``);
* splits ``engine_args`` (or ``args``) as ``shlex.split`` does: each string item of a list
  (a list item's words as they are), or the whole value when it is a string;
* starts ``python -m vllm.entrypoints.openai.api_server --model MODEL ARGS`` for an
  ``engine: vllm`` instance (any case), in a pane where it first exports the ``kvcached``
  section's keys upper-cased (Python's ``str`` of each value: ``True``, ``0.95``) and then
  the instance's ``engine_env`` and ``kvcached_env`` entries; an SGLang instance is no
  vLLM engine.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from kvconfig.errors import NoEngine
from kvconfig.load import yamlfile as _yaml
from kvconfig.load.engine_fields import check_words
from kvconfig.load.operator_engine import Engine

_ENGINES = ("vllm", "sgl", "sglang")


def _refused(doc: _yaml.Document, what: str, *path: str | int) -> NoEngine:
    return NoEngine(
        f"kvcached's controller refuses the config: {what} (controller/launch.py)",
        source=doc.source,
        line=doc.line(*path) or 1,
        key=".".join(map(str, path)),
        hint="write the instance as kvcached's controller/example-config.yaml does",
    )


def engines(doc: _yaml.Document, base: Path) -> list[Engine]:
    data = doc.data
    section = data.get("kvcached") or {}
    if not isinstance(section, dict):
        raise _refused(doc, "the kvcached section is no mapping", "kvcached")
    shared = {str(k).upper(): str(v) for k, v in section.items()}
    parsed = [_instance(doc, k, inst) for k, inst in enumerate(data["instances"])]
    out: list[Engine] = []
    for k, (engine, words, env) in enumerate(parsed):
        if engine not in _ENGINES or env is None:
            break  # the launch raises: this instance and the ones after it never start
        if engine != "vllm":
            continue
        inst = data["instances"][k]
        name = f"instances[{k}] ({inst.get('name', inst['model'].split('/')[-1])})"
        line = doc.line("instances", k)
        argv = ["--model", inst["model"], *words]
        check_words(argv, doc.source, line, name)
        out.append(
            Engine(
                name=name,
                source=doc.source,
                line=line,
                argv=tuple(argv),
                entry="api_server",
                parser="api_server",
                env={**shared, **env},
                parallelism={"replicas": 1},
                base=str(base),
            )
        )
    if not out:
        raise NoEngine(
            "no vLLM engine: the kvcached controller config starts no vllm instance",
            source=doc.source,
            line=doc.line("instances") or 1,
            key="instances",
            hint="lint the vLLM instances' configs",
        )
    return out


def _instance(
    doc: _yaml.Document, k: int, inst: Any
) -> tuple[str, list[str], dict[str, str] | None]:
    """(engine, its arguments, its environment) of instance ``k``, as ``_parse_cfg``
    reads it; the environment None when an entry has no ``=`` (``collect_env_mods``
    raises at its launch)."""
    if not isinstance(inst["model"], str) or not isinstance(inst["engine"], str):
        raise _refused(doc, "model and engine must be strings", "instances", k)
    words = _words(doc, k, inst.get("engine_args", inst.get("args", [])))
    env: dict[str, str] = {}
    for key in ("engine_env", "kvcached_env"):
        if not isinstance(inst.get(key, []), list):
            raise _refused(doc, f"'{key}' must be a list of KEY=VALUE strings",
                           "instances", k, key)  # fmt: skip
    if inst.get("using_venv") and not inst.get("venv_path"):
        raise _refused(doc, "'venv_path' must be given when 'using_venv' is true",
                       "instances", k)  # fmt: skip
    for key in ("engine_env", "kvcached_env"):  # collect_env_mods, at launch
        for entry in inst.get(key, []):
            name, eq, value = str(entry).partition("=")
            if not eq:
                return inst["engine"].lower(), words, None
            env[name] = value
    return inst["engine"].lower(), words, env


def _words(doc: _yaml.Document, k: int, raw: Any) -> list[str]:
    """``engine_args`` as ``_parse_cfg`` splits it."""
    items = raw if isinstance(raw, list) else [raw]
    out: list[str] = []
    for i, item in enumerate(items):
        if isinstance(item, (list, tuple)):
            out.extend(str(w) for w in item)
            continue
        try:
            out.extend(shlex.split(str(item)))
        except ValueError as e:
            raise _refused(doc, f"engine_args: {e}", "instances", k, "engine_args", i) from None
    return out
