"""``--engine vllm``, ``both`` and ``auto``: the command line's deployments through vLLM's
own start-up (``kvconfig.engine``), all in one pool of child processes (``auto``: only
those whose model kvconfig cannot derive offline).

Each deployment goes to vLLM as vLLM would receive it: a serve config as ``--config
FILE`` started in the file's folder, a pasted command as its words and environment, an
operator file's engine as its container's words and literal environment, started in the
file's folder. A native kvconfig file describes layers, not a vLLM command, so it has no
start-up to run.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvconfig.cli import outcomes as O
from kvconfig.cli import targets as T
from kvconfig.errors import InputError
from kvconfig.load import jsontext

if TYPE_CHECKING:
    from kvconfig.engine import Target
    from kvconfig.load.hub import ModelPaths


def run(args: argparse.Namespace, s: O.Settings, slots: list[O.Slot], many: bool) -> list[O.Slot]:
    """The slots with vLLM's plans: ``vllm`` replaces the offline plan, ``both`` adds a
    KV602 finding per difference from it."""
    from kvconfig import engine

    # ``auto`` sends only what has no offline plan; ``both`` the offline plans too
    waiting = [
        i
        for i, slot in enumerate(slots)
        if slot.platform is not None
        and (slot.outcome is None or (s.engine != "auto" and slot.offline is not None))
    ]
    if not waiting:
        return slots
    asked: list[int] = []
    with _files(slots, waiting) as files:
        targets = []
        for i in waiting:
            try:
                targets.append(_target(args, s, slots[i], files.get(i)))
            except InputError as err:
                if not many:
                    raise
                slots[i] = O.error_slot(slots[i].item, O.label(slots[i].platform), err)
                continue
            asked.append(i)
        answers = engine.plans(
            targets,
            jobs=args.jobs,
            timeout=args.engine_timeout,
            trust_remote_code=bool(getattr(args, "trust_remote_code", False)),
            python=args.vllm_python,
        )
    for i, answer in zip(asked, answers, strict=True):
        slot = slots[i]
        assert slot.platform is not None
        if isinstance(answer, InputError):
            if not many:
                raise answer
            slots[i] = O.error_slot(slot.item, O.label(slot.platform), answer)
            continue
        plan = answer
        if slot.loaded is not None and not isinstance(slot.loaded, Exception):
            plan = O.with_notices(plan, slot.loaded)
        if s.engine == "both" and slot.offline is not None:
            plan = engine.both(slot.offline, plan)
        slots[i] = slot._replace(outcome=O.outcome(slot.item, slot.platform, plan))
    return slots


def _target(args: argparse.Namespace, s: O.Settings, slot: O.Slot, config: str | None) -> Target:
    """What vLLM's start-up receives for one slot."""
    from kvconfig.engine import Target

    item, platform = slot.item, slot.platform
    common: dict[str, Any] = {
        "platform": platform,
        "cubins": args.trtllm_cubins is not False,
        "hooks": args.hooks or "none",
        "download": bool(getattr(args, "download", None)),
    }
    if item.engine is not None:
        from kvconfig.load.engine_options import with_mounts

        e = item.engine
        words = _mapped((*_default_words(e.defaults), *e.argv), with_mounts(s.model_paths, e))
        cwd = str(Path(e.base).resolve())
        return Target(item.source, words, cwd, env={**e.env, **s.env}, **common)
    if isinstance(item.target, list):
        from kvconfig.load.command import split_command

        cmd = split_command(item.target)
        words = _mapped((*_default_words(cmd.defaults), *cmd.argv), s.model_paths)
        return Target(item.source, words, os.getcwd(), env={**cmd.env, **s.env}, **common)
    from kvconfig.load.deployment import is_native

    assert item.doc is not None
    if is_native(item.doc):
        raise InputError(
            "a native kvconfig file has no vLLM command to start",
            source=item.source,
            key="--engine",
            hint="run vLLM's start-up on the vllm serve config or command it describes, "
            "or use --engine offline",
        )
    path = config or os.path.abspath(str(item.target))
    cwd = os.getcwd() if config else os.path.dirname(path)
    return Target(item.source, ("--config", path), cwd, env=dict(s.env), **common)


def _default_words(defaults: Mapping[str, Any]) -> list[str]:
    """A launcher's defaults as words before the user's (vLLM's parser: the last wins)."""
    words: list[str] = []
    for key, value in defaults.items():
        if value is True:
            words.append(f"--{key}")
        elif value is not False and value is not None:
            words += [f"--{key}", str(value)]
    return words


def _mapped(words: tuple[str, ...], paths: ModelPaths | None) -> tuple[str, ...]:
    """The words with every path ``--model-path`` (or a bind mount) maps to a folder here
    replaced by that folder, in JSON options too, as the offline loader reads them."""
    if paths is None or not paths.rules:
        return words

    def one(value: str) -> str:
        found = paths.map(value)
        return str(found.resolve()) if found is not None and found.exists() else value

    out = []
    for word in words:
        head, eq, tail = word.partition("=") if word.startswith("--") else ("", "", word)
        if tail.lstrip().startswith("{"):
            try:
                data = jsontext.loads(tail)
            except ValueError:
                data = None
            if isinstance(data, dict) and isinstance(data.get("model"), str):
                tail = json.dumps({**data, "model": one(data["model"])})
        else:
            tail = one(tail)
        out.append(f"{head}{eq}{tail}")
    return tuple(out)


@contextmanager
def _files(slots: list[O.Slot], waiting: list[int]) -> Iterator[dict[int, str]]:
    """A serve config read from standard input, written where vLLM's ``--config`` can read
    it for the run (removed after)."""
    import yaml

    files: dict[int, str] = {}
    with tempfile.TemporaryDirectory(prefix="kvconfig-stdin-") as folder:
        for i in waiting:
            item = slots[i].item
            if item.target == T.STDIN and item.doc is not None:
                path = Path(folder) / "stdin.yaml"
                path.write_text(yaml.safe_dump(item.doc.data), encoding="utf-8")
                files[i] = str(path)
        yield files
