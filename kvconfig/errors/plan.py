"""The errors of reading input, deriving models and resolving plans (re-exported by
``kvconfig.errors``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class KVConfigError(ValueError):
    """Base of all kvconfig errors."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), dict(self.__dict__), str(self)))


def _rebuild(cls: type[KVConfigError], state: dict[str, Any], text: str) -> KVConfigError:
    err = cls.__new__(cls)
    ValueError.__init__(err, text)
    err.__dict__.update(state)
    return err


class InputError(KVConfigError):
    """Bad input: a file, a key or a command-line value kvconfig cannot use.

    Renders as one line, ``file:line: key: what was wrong (how to fix it)``; the
    parts that are unknown are left out (docs/errors.md).
    """

    def __init__(
        self,
        message: str,
        *,
        source: str = "",
        line: int | None = None,
        key: str = "",
        hint: str = "",
    ) -> None:
        self.message = message
        self.source = source
        self.line = line
        self.key = key
        self.hint = hint
        super().__init__(self.render())

    def render(self) -> str:
        """The one-line form shown to users."""
        where = self.source
        if where and self.line is not None:
            where = f"{where}:{self.line}"
        parts = [p for p in (where, self.key) if p]
        text = ": ".join([*parts, self.message])
        if self.hint:
            text = f"{text} ({self.hint})"
        # one line, always: a file name or value with a line break must not split it
        return text.replace("\r", "\\r").replace("\n", "\\n")

    def located(self, source: str, line: int | None = None) -> InputError:
        """The same error, attributed to ``source`` (and ``line``) if it had no source.

        An error about another file (a model's ``config.json``) keeps its own place.
        """
        if self.source and self.source != source:
            return self
        return type(self)(
            self.message,
            source=self.source or source,
            line=self.line if self.line is not None else line,
            key=self.key,
            hint=self.hint,
        )


class ModelUnavailable(InputError):
    """The model's ``config.json`` cannot be read offline: a Hugging Face id that is not in
    the cache (and no download allowed), or a path that is no folder here (a mount inside
    the pod). The file is valid: the commands give the deployment verdict ``unknown``
    (finding KV402, exit 0, saying how to give the model), a fleet keeps the engine as its
    file reads for the checks that need no model, and ``load_deployment`` raises it."""


class DuplicateKey(InputError):
    """A YAML mapping holds a key twice. Runtimes differ: kubectl and docker compose
    refuse it ("mapping key already defined"), while vLLM's ``--config`` reader and
    Helm's values reader keep the last value (``kvconfig.load.yamlfile``)."""


class NoEngine(InputError):
    """The input holds no vLLM engine: only resources without a pod (Services,
    ConfigMaps), a launch script that starts no server, an empty file, or a YAML file that
    is neither an operator file nor a ``vllm serve --config`` or native file. Bad input for
    a file named on the command line; a file a folder walk finds is passed over instead
    (``kvconfig lint FOLDER``), so a repository's other YAML files are no error."""


class UnsupportedArchitecture(KVConfigError):
    """vLLM knows the architecture but kvconfig cannot derive its layers offline: the
    outcome is ``unknown`` (finding KV401), never a rejection.

    ``snippet`` is a native file of the layers when one is known to be right (finding
    KV401 shows it); empty otherwise.
    """

    def __init__(self, architecture: str, source: str, snippet: str = "") -> None:
        self.architecture = architecture
        self.source = source
        self.snippet = snippet
        message = (
            f"{source}: kvconfig cannot derive the KV-cache layers of {architecture!r}; "
            "plan it with vLLM's own start-up (--engine auto or --engine vllm, with "
            "kvconfig[vllm] installed), "
            "or describe them in a native kvconfig file (docs/native-format.md)"
        )
        super().__init__(message + (", starting from:\n" + snippet if snippet else ""))


class RunTimeValue(KVConfigError):
    """An option that changes the plan holds a word only known at run time (``$(TP)`` from
    a ConfigMap, ``$BS`` from the pod's environment, ``$(cat FILE)``). The file is valid;
    kvconfig cannot tell its plan, so the outcome is ``unknown`` (finding KV403), never a
    rejection and never a guess. ``fixes`` say how to settle the value."""

    def __init__(
        self, word: str, option: str, *, engine: str, source: str, line: int | None,
        fixes: Sequence[str],
    ) -> None:  # fmt: skip
        self.word = word
        self.option = option
        self.engine = engine
        self.source = source
        self.line = line
        self.fixes = list(fixes)
        where = f"{source}:{line}" if line is not None else source
        super().__init__(f"{where}: {engine}: {self.reason}")

    @property
    def reason(self) -> str:
        """``$BS is only known at run time, and --block-size changes the plan``."""
        return f"{self.word} is only known at run time, and {self.option} changes the plan"


CannotTell = UnsupportedArchitecture | ModelUnavailable | RunTimeValue
"""Why kvconfig cannot tell a deployment's plan offline (findings KV401, KV402, KV403): the
verdict is ``unknown``, never a rejection."""


class DeploymentError(KVConfigError):
    """A contradiction inside a deployment (``schemas.deployment``), with the path of the
    key it is about; the loaders report it as an ``InputError`` at that key's line."""

    def __init__(self, message: str, loc: tuple[str | int, ...], hint: str) -> None:
        self.message = message
        self.loc = loc
        self.hint = hint
        super().__init__(message)


class ScriptStops(KVConfigError):
    """A launch script stops here (``exit``, ``exec``, ``${X:?}`` unset, a special
    builtin failing in dash). Internal to ``kvconfig.load.shell``, which catches it where
    the shell would end the script or subshell; it never reaches a caller."""

    def __init__(self, reason: str = "") -> None:
        self.reason = reason
        super().__init__(reason)


class ScriptJumps(KVConfigError):
    """``break``/``continue``/``return`` of a launch script leaving ``count`` loops or a
    function; ``status``: what a ``return`` gives (None: only known at run time).
    Internal to ``kvconfig.load.shell``, like ``ScriptStops``."""

    def __init__(self, kind: str, count: int, status: int | None = None) -> None:
        self.kind = kind
        self.count = count
        self.status = status
        super().__init__(f"{kind} {count}")


class ProgramUnread(KVConfigError):
    """A Python program a launch script runs does something ``kvconfig.load.shell.pyprint``
    does not follow (a loop, a call of anything else): its output is only known at run
    time. Internal to ``kvconfig.load.shell``, like ``ScriptStops``."""


class AnyVariable(KVConfigError):
    """A function's text may set any variable (``eval``, ``source``, a command named at
    run time): ``kvconfig.load.shell.effects`` has no list of what it sets. Internal to
    ``kvconfig.load.shell``."""


class NotCliTemplate(KVConfigError):
    """A template action outside the part of Go's template language the Kthena CLI's
    manifest templates use (``kvconfig.load.kubernetes.kthena_cli``): the file is no CLI
    template. Internal to that reader."""


class NoCommonBlockSize(KVConfigError):
    """Without ``--block-size``, no block size suits every attention backend.

    Mirrors ``Platform._preferred_block_size_for_backends`` raising
    (``vllm/platforms/interface.py``): "The attention backends share no supported KV
    cache block size".
    """

    def __init__(self, names: Sequence[str]) -> None:
        self.names = list(names)
        super().__init__(", ".join(self.names))


class AlignedBlockSizeUnsupported(KVConfigError):
    """Hybrid alignment moved B to a size some backend rejects.

    Mirrors ``Platform._check_aligned_block_size`` (``vllm/platforms/interface.py``).
    """

    def __init__(self, block_size: int, names: Sequence[str]) -> None:
        self.block_size = block_size
        self.names = list(names)
        super().__init__(f"{block_size}: {', '.join(self.names)}")


class GroupingError(KVConfigError):
    """vLLM cannot group these KV-cache specs: ``get_kv_cache_groups``
    (``vllm/v1/core/kv_cache_planning.py``) raises at start-up with this message."""


def describe(value: Any) -> str:
    """``the list [1, 2]``: a value and its type, shortened, for error messages."""
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    kinds = {int: "integer", float: "number", str: "string", list: "list", dict: "mapping"}
    text = repr(value)
    if len(text) > 40:
        text = text[:37] + "..."
    return f"the {kinds.get(type(value), type(value).__name__)} {text}"


class NoCommonKernelBlockSize(KVConfigError):
    """No kernel block size divides B and is accepted by every backend of a group.

    The message matches vLLM's ``select_common_block_size`` error
    (``vllm/v1/worker/utils.py``).
    """

    def __init__(self, block_size: int, declared: Sequence[tuple[str, str]]) -> None:
        self.block_size = block_size
        self.declared = list(declared)
        body = "; ".join(f"{name}: {sizes}" for name, sizes in self.declared)
        super().__init__(f"No common block size for {block_size} ({body}).")


class KernelBlockSizeMismatch(KVConfigError):
    """A KV-cache group's kernel block size is not the one the KV cache was allocated with.

    Raised by the kvconfig vLLM hooks at start-up, before the engine serves a request.
    ``reason`` says what was found:

    * ``mismatch``: a component (the speculator, a V1 drafter) uses ``found``-token
      kernel pages where the model runner split the cache into ``expected``-token pages;
    * ``unverified``: a speculator was set up without passing through the hook, so
      nothing guarantees it uses the runner's pages;
    * ``catalog``: kvconfig's own vote (its backend catalog) gives ``found`` where
      vLLM's model runner chose ``expected`` (``KVCONFIG_MODE=strict`` only).

    The fields survive pickling (vLLM workers are separate processes).
    """

    def __init__(
        self,
        *,
        group: int,
        layers: Sequence[str],
        backends: Sequence[str],
        block_size: int,
        expected: int,
        found: int | None,
        component: str = "speculator",
        component_layers: Sequence[str] = (),
        reason: str = "mismatch",
        mode: str = "enforce",
        detail: str = "",
    ) -> None:
        self.group = group
        self.layers = list(layers)
        self.backends = list(backends)
        self.block_size = block_size
        self.expected = expected
        self.found = found
        self.component = component
        self.component_layers = list(component_layers)
        self.reason = reason
        self.mode = mode
        self.detail = detail
        super().__init__(self.render())

    @staticmethod
    def _shown(names: Sequence[str]) -> str:
        head = ", ".join(names[:3])
        return head + (f" and {len(names) - 3} more" if len(names) > 3 else "")

    def _consequence(self) -> str:
        if self.found == self.block_size:
            return (
                "Its attention would read the wrong KV pages: draft tokens after the first "
                "would be rejected (acceptance collapses) while the output stays correct."
            )
        if self.found is not None and self.found > self.expected:
            return (
                "vLLM would then stop while binding the KV cache with a misleading error "
                "about packed blocks that cannot be split."
            )
        return "Its attention would read KV pages of the wrong size."

    def _fixes(self) -> str:
        fixes = []
        if self.mode != "enforce":
            fixes.append("run with KVCONFIG_MODE=enforce (the default)")
        fixes.append(f"set --block-size {self.expected}")
        fixes.append(
            "give the drafter the target's attention backend (speculative-config attention_backend)"
        )
        return "Fix: " + ", or ".join(fixes) + "."

    def render(self) -> str:
        """The operator-facing message: one paragraph."""
        where = (
            f"kvconfig: KV-cache group {self.group} ({self._shown(self.layers)}; "
            f"backends {', '.join(self.backends)})"
        )
        who = self.component
        if self.component_layers:
            who = f"{who} (layers {self._shown(self.component_layers)})"
        if self.reason == "catalog":
            text = (
                f"{where} has {self.block_size}-token blocks. vLLM's model runner split them "
                f"into {self.expected}-token kernel pages, but kvconfig's backend catalog votes "
                f"{'no common size' if self.found is None else f'{self.found}-token pages'}: "
                "vLLM's rules differ from the ones kvconfig was built for, so its plan cannot "
                "be vouched for and KVCONFIG_MODE=strict refuses to start. Fix: use a kvconfig "
                "release whose catalog matches this vLLM, or run with KVCONFIG_MODE=enforce "
                "(logs the difference and starts)."
            )
        elif self.reason == "unverified":
            text = (
                f"{where} has {self.block_size}-token blocks that the model runner split into "
                f"{self.expected}-token kernel pages, but the {who} was set up without passing "
                "through kvconfig's hook on DraftModelSpeculator.set_attn (its class overrides "
                "set_attn without calling it), so nothing guarantees it reads those pages; it "
                f"uses {self.found}-token pages. kvconfig refuses to start rather than risk "
                "silently wrong draft attention. Fix: run that speculator through "
                "DraftModelSpeculator.set_attn, or set --block-size "
                f"{self.expected}, or run with KVCONFIG_MODE=warn to start anyway."
            )
        else:
            text = (
                f"{where} has {self.block_size}-token blocks that the model runner split into "
                f"{self.expected}-token kernel pages, but the {who} uses "
                f"{self.found}-token pages. {self._consequence()} {self._fixes()}"
            )
        if self.detail:
            text = f"{text} {self.detail}"
        return text


class MachineryError(KVConfigError):
    """kvconfig's engine code failed against the installed vLLM (it cannot find what it
    drives): not vLLM's answer, so never reported as vLLM refusing a deployment."""
