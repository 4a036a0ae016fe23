"""An operator file's engine (``kvconfig.load.engines.Engine``) as ``vllm serve`` options.

The engine's words go through vLLM's argument rules (``kvconfig.load.command``) with its
entry point's parser, relative to its file's folder; the launcher's defaults fill the
options left unset. What the file leaves to run time is decided here:

* a word only known at run time (``unknown-value``: a Secret's ``$(VAR)``, a command
  substitution) in an option that changes the plan is ``RunTimeValue`` naming it (the
  verdict is unknown, finding KV403); elsewhere it does not matter;
* arguments only known at run time (KServe's ``VLLM_ADDITIONAL_ARGS`` from a Secret)
  are finding KV805; a variable that changes the plan set from a Secret, or a whole
  ``envFrom`` source, finding KV804;
* a vLLM release kvconfig has no data for is an error unless ``--vllm-version`` says
  which release to plan for.

Errors about the engine's own file name the engine: ``FILE:LINE: ENGINE: KEY: ...``.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from kvconfig.codes import FindingCode
from kvconfig.errors import InputError, RunTimeValue
from kvconfig.load import jsontext
from kvconfig.load.checks import PLAN_ENV
from kvconfig.load.serve import Notice, Options
from kvconfig.mirror.connectors.registry import read_part

if TYPE_CHECKING:
    from kvconfig.load.hub import ModelPaths
    from kvconfig.load.operator_engine import Engine

#: Options whose value changes the plan: a value only known at run time makes it unknown.
PLAN_OPTIONS = (
    "model",
    "hf-config-path",
    "block-size",
    "attention-backend",
    "attention-config",
    "speculative-config",
    "kv-transfer-config",
    "kv-offloading-backend",
    "kv-cache-dtype",
    "tensor-parallel-size",
    "hf-overrides",
    "max-model-len",
    "mamba-cache-dtype",
    "mamba-ssm-cache-dtype",
)

T = TypeVar("T")


def engine_version(
    engine: Engine, asked: str | None, configured: str | None = None
) -> tuple[str, list[Notice]]:
    """The vLLM release to plan an engine for, with KV502 when it is assumed.

    In order: ``asked`` (``--vllm-version``), ``configured`` (the repository
    configuration's ``vllm_version``), the release the engine's image tag names, the
    release its script pins (``pip install vllm==X``), else the registry's default.
    A release kvconfig has no rules for plans with the nearest one it knows (KV502)."""
    from kvconfig.mirror import versions

    said = asked or configured or engine.vllm_version
    if not said:
        unsaid = [n for n in engine.notes if n.kind == "vllm-version-unsaid"]
        return versions.DEFAULT, [
            Notice(
                FindingCode.RELEASE_ASSUMED,
                f"{engine.name}: {n.message}; this plan assumes vLLM {versions.DEFAULT} (the "
                f"newest release kvconfig knows), whose rules may differ: {versions.CHECK}",
            )
            for n in unsaid[:1]
        ]
    named = versions.release(
        str(said), source=engine.source, line=engine.line, key="--vllm-version"
    )
    if not named.assumed:
        return named.version, []
    return named.version, [Notice(FindingCode.RELEASE_ASSUMED, f"{engine.name}: {named.message()}")]


def engine_options(
    engine: Engine,
    *,
    version: str,
    model_paths: ModelPaths | None = None,
    download: bool | None = None,
) -> Options:
    """The options vLLM's parser takes from the engine's words, with its notices."""
    base = Path(engine.base)
    opts = located(
        engine,
        lambda: _parsed(engine, version, base),
    )
    opts.model_uri = engine.model_uri
    opts.speculator_uri = engine.speculator_uri
    opts.model_paths = with_mounts(model_paths, engine)
    opts.download = download
    _unknown_values(engine, opts)
    opts.notices.extend(_environment(engine))
    codes = {
        "run-time-branch": FindingCode.RUNTIME_BRANCH,
        "run-time-rounds": FindingCode.RUNTIME_BRANCH,
        "dropped-words": FindingCode.COMMAND_DROPPED,
    }
    for note in engine.notes:
        if note.kind in codes:
            opts.notices.append(Notice(codes[note.kind], f"{engine.name}: {note.message}"))
    return opts


def _parsed(engine: Engine, version: str, base: Path) -> Options:
    from kvconfig.load.command import options_from_argv

    return options_from_argv(
        engine.argv,
        version=version,
        parser=engine.parser,
        base=base,
        source=engine.source,
        line=engine.line,
        env=engine.env,
        defaults=engine.defaults,
        written_for=written_for(engine),
    )


_NUMBERED = re.compile(r"^v?\d+\.\d+")
_CHANNELS = ("nightly", "latest", "main", "dev", "head")
_PINNED = re.compile(r"(?<![0-9a-f])(?:20\d\d-?[01]\d-?[0-3]\d|[0-9a-f]{7,40})(?![0-9a-f])")
"""A date (``20250120``, ``2025-01-20``) or a commit hash in a channel's tag: the build of
that day or commit (``nightly_main_20250120``, ``nightly-<sha>``), not the newest."""


def written_for(engine: Engine) -> str | None:
    """The vLLM the engine's words were written for, when kvconfig reads them with another
    release's option table (KV502), else None: a numbered release kvconfig has no rules for
    (``vllm/vllm-openai:v0.10.2``, ``pip install vllm==0.6.6``: read with the nearest known
    release, ``versions.release``), or an image whose tag names no vLLM release and no
    channel (``lmcache/vllm-openai:2025-05-05-v1``, a vendor's build such as
    ``opea/vllm-gaudi:1.22.0``: read with the newest). Options come and go between releases
    (vLLM 0.10 took ``--swap-space`` and ``--disable-log-requests``, later releases refuse
    them), so what that table refuses may be what the vLLM that runs takes: kvconfig cannot
    tell, and says so rather than calling the file bad input. NVIDIA Dynamo's runtime
    images are such builds too: each Dynamo release bundles the vLLM it pins
    (ai-dynamo/dynamo ``docs/reference/release-artifacts.md``), not the newest, so the
    words ``dynamo.vllm`` hands to vLLM in one are read the same way. A known release, a
    channel of vLLM's own images (``latest``, ``nightly``: the newest runs) or no image:
    None; a channel's tag that names a day or a commit (``nightly_main_20250120``) is that
    old build, not the newest, and is read as a build that names no release, as is another
    image's channel (``opea/vllm-gaudi:latest`` is the newest build of HabanaAI's fork, not
    of vLLM)."""
    from kvconfig.load.engine_fields import is_vllm_image, split_image
    from kvconfig.mirror import versions

    said = engine.vllm_version
    if said:
        named = str(said)
        if named in versions.KNOWN or not _NUMBERED.match(named):
            return None
        return f"vLLM {named}"
    if not engine.image:
        return None
    tag = split_image(engine.image)[1]
    if not tag:
        return None
    channel = any(w in tag.lower() for w in _CHANNELS) and not _PINNED.search(tag.lower())
    if channel and is_vllm_image(engine.image):
        return None
    return f"the vLLM of {engine.image}"


def located(engine: Engine, run: Callable[[], T]) -> T:
    """``run()``, its input errors about the engine's file naming the engine."""
    try:
        return run()
    except InputError as err:
        own = err.source in ("", engine.source) and not err.key.startswith(engine.name)
        hint = _unset_hint(engine, err.hint)
        if not own and hint == err.hint:
            raise
        raise type(err)(
            err.message,
            source=engine.source if own else err.source,
            line=(err.line if err.line is not None else engine.line) if own else err.line,
            key=_key(engine, err.key) if own else err.key,
            hint=hint,
        ) from None


def _unset_hint(engine: Engine, hint: str) -> str:
    """``hint``, saying which variables compose made empty in the engine's service (set
    neither in the ``.env`` beside the file nor with ``--env``): an error about its
    command often comes from one of them (``--model $LLM_MODEL_ID``, exported by a
    ``set_env.sh`` the user runs first)."""
    unset = [n.key for n in engine.notes if n.kind == "unset-variable" and n.key]
    if not unset:
        return hint
    names = ", ".join(f"${name}" for name in unset[:3]) + (" ..." if len(unset) > 3 else "")
    said = (
        f"compose made {names} empty, as neither the .env beside the file nor --env sets "
        f"{'it' if len(unset) == 1 else 'them'}: pass the environment compose runs in, "
        f"e.g. --env {unset[0]}=VALUE"
    )
    return f"{hint}; {said}" if hint else said


def _key(engine: Engine, key: str) -> str:
    return f"{engine.name}: {key}" if key else engine.name


def with_mounts(paths: ModelPaths | None, engine: Engine) -> ModelPaths | None:
    """``--model-path`` rules and the engine's bind mounts (the longest pattern wins)."""
    if not engine.mounts:
        return paths
    from kvconfig.load.hub import ModelPaths

    given = paths.rules if paths is not None else ()
    mounted = [(inside.rstrip("/") or "/", Path(outside)) for inside, outside in engine.mounts]
    rules = sorted([*given, *mounted], key=lambda r: len(r[0]), reverse=True)
    mounts = {p for p, _ in mounted} - {p for p, _ in given}
    return ModelPaths(tuple(rules), frozenset(mounts) | (paths.mounts if paths else frozenset()))


def _words(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        yield from (str(v) for v in value)


def run_time_words(
    engine: Engine, values: Mapping[str, Any], options: Sequence[str]
) -> Iterator[tuple[str, str, int | None]]:
    """(option, word, line) for each of ``options`` whose value holds a word only known at
    run time (the engine's ``unknown-value`` notes)."""
    from kvconfig.load.models import loaded_copy

    for note in engine.notes:
        if note.kind != "unknown-value" or " in argument " not in note.message:
            continue
        what = note.message.split(" in argument ", 1)[0]
        for option in options:
            words = [w for w in _words(values.get(option)) if what in w]
            if option == "model":  # an operator's loaded copy (KubeAI's waits on the UID)
                words = [w for w in words if loaded_copy(w, engine.model_uri) is None]
            if option == "kv-transfer-config" and all(_inert(w, what) for w in words):
                continue
            if words:
                yield option, what, note.line if note.line is not None else engine.line


def _inert(text: str, word: str) -> bool:
    """Whether a word only known at run time sits only in strings no plan reads (outside
    ``kvconfig.mirror.connectors.registry.read_part``): where a connector listens, its
    buffer's size, the extra configuration of a connector whose extra configuration no
    plan reads (LMCache's RPC port, a P2P address). The connector and its role stay
    known, and so does the plan."""
    try:
        data = json.loads(text)
    except ValueError:
        return _past_run_time(text) is not None  # the word breaks the JSON: $PORT unquoted
    if not isinstance(data, dict):
        return False
    return word not in json.dumps(read_part(data), ensure_ascii=False)


@functools.lru_cache(maxsize=64)
def _past_run_time(text: str) -> str | None:
    """A kv-transfer config whose run-time parts break its JSON (an unquoted ``$PORT``),
    written as JSON with a stand-in for them, when the part a rule reads is the same
    whatever stands in; else None."""
    pair = jsontext.with_stand_ins(text)
    if pair is None or read_part(pair[0]) != read_part(pair[1]) or not read_part(pair[0]):
        return None
    return json.dumps(pair[0])


def _unknown_values(engine: Engine, opts: Options) -> None:
    """Raise RunTimeValue for a plan-relevant option whose value is only known at run time
    (the verdict is unknown, finding KV403); note arguments only known at run time. A
    base configuration only the cluster holds (``unknown-base``: a KServe
    ``spec.baseRefs`` config not in the input) leaves the whole command unknown."""
    for note in engine.notes:
        if note.kind == "unknown-base":
            raise RunTimeValue(
                f"{note.key} (an LLMInferenceServiceConfig in the cluster, not in the input)",
                "spec.baseRefs",
                engine=engine.name,
                source=engine.source,
                line=note.line if note.line is not None else engine.line,
                fixes=[
                    "give the config in the same input: cat config.yaml service.yaml | "
                    "kvconfig lint -",
                    f"or take it from the cluster: kubectl get llminferenceserviceconfig "
                    f"{note.key} -o yaml > config.yaml",
                ],
            )
    for note in engine.notes:
        if note.kind == "unknown-value" and " in argument " not in note.message:
            opts.notices.append(
                Notice(FindingCode.RUNTIME_ARGUMENTS, f"{engine.name}: {note.message}")
            )
    kv = opts.values.get("kv-transfer-config")
    for option, what, line in run_time_words(engine, opts.values, PLAN_OPTIONS):
        shown = option if option == "model" else f"--{option}"
        raise RunTimeValue(
            what,
            shown,
            engine=engine.name,
            source=engine.source,
            line=line,
            fixes=_settle(engine, what, shown),
        )
    if isinstance(kv, str) and jsontext.RUN_TIME_PART.search(kv):
        try:
            json.loads(kv)
        except ValueError:  # its run-time parts lie where no rule reads (inert, above)
            opts.values["kv-transfer-config"] = _past_run_time(kv) or kv


_VARIABLE = re.compile(r"^\$\{?([A-Za-z_]\w*)\}?$")
_K8S_VARIABLE = re.compile(r"^\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)$")


def _settle(engine: Engine, word: str, option: str) -> list[str]:
    """How to make a value only known at run time known to kvconfig."""
    fixes = [
        f"write {option}'s value in the file",
        "or lint the manifest as it is applied, with the values filled in (helm template, "
        "kustomize build)",
    ]
    variable = _VARIABLE.match(word)
    if variable and engine.name.startswith("compose/"):
        name = variable.group(1)
        fixes.append(
            f"or, where the service takes {name} from the environment compose runs in "
            f"(environment: [{name}]), pass --env {name}=VALUE"
        )
    cluster = _K8S_VARIABLE.match(word)
    if cluster and (cluster.group(1) in engine.env_unknown or engine.env_from):
        name = cluster.group(1)
        fixes.append(
            f"or, as {name} is set in the cluster (valueFrom, envFrom), pass its value: "
            f"--env {name}=VALUE"
        )
    fixes.append(
        "or plan it where it runs, with the value known: kvconfig plan --engine vllm -- "
        f"vllm serve ... {option} VALUE"
    )
    return fixes


def _environment(engine: Engine) -> list[Notice]:
    """KV804 for plan-changing variables set from a Secret, ConfigMap or envFrom."""
    out = []
    hidden = [n for n in engine.env_unknown if n in PLAN_ENV]
    if hidden:
        out.append(
            Notice(
                FindingCode.RUNTIME_ENVIRONMENT,
                f"{engine.name}: {', '.join(hidden)} is set from a Secret, ConfigMap or the "
                "pod, so its value is only known at run time; this plan assumes it unset "
                "(the model runner and the plan may differ)",
            )
        )
    if engine.env_from:
        out.append(
            Notice(
                FindingCode.RUNTIME_ENVIRONMENT,
                f"{engine.name}: variables also come from {', '.join(engine.env_from)}, whose "
                f"values are only known at run time; if they set {', '.join(PLAN_ENV)}, the "
                "model runner and the plan differ from this one",
            )
        )
    return out
