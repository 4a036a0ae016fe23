"""Every error kvconfig raises. All derive from ``KVConfigError`` and survive pickling,
because vLLM raises them in worker processes and re-raises them elsewhere."""

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
        return InputError(
            self.message,
            source=self.source or source,
            line=self.line if self.line is not None else line,
            key=self.key,
            hint=self.hint,
        )


class NoCommonKernelBlockSize(KVConfigError):
    """No kernel block size divides B and is accepted by every backend of a group.

    The message matches vLLM 0.33.0's ``select_common_block_size`` error.
    """

    def __init__(self, block_size: int, declared: Sequence[tuple[str, str]]) -> None:
        self.block_size = block_size
        self.declared = list(declared)
        body = "; ".join(f"{name}: {sizes}" for name, sizes in self.declared)
        super().__init__(f"No common block size for {block_size} ({body}).")


class KernelBlockSizeMismatch(KVConfigError):
    """Two vLLM components disagree on a KV-cache group's kernel block size.

    Raised by the kvconfig hooks before the engine serves a request.
    """

    def __init__(
        self,
        *,
        group: int,
        layers: Sequence[str],
        backends: Sequence[str],
        block_size: int,
        expected: int,
        found: int,
        component: str = "speculator",
        detail: str = "",
    ) -> None:
        self.group = group
        self.layers = list(layers)
        self.backends = list(backends)
        self.block_size = block_size
        self.expected = expected
        self.found = found
        self.component = component
        self.detail = detail
        super().__init__(self.render())

    def render(self) -> str:
        """The operator-facing message."""
        shown = ", ".join(self.layers[:4]) + (
            f" and {len(self.layers) - 4} more" if len(self.layers) > 4 else ""
        )
        text = (
            f"kvconfig: KV-cache group {self.group} ({shown}; backends "
            f"{', '.join(self.backends)}) has {self.block_size}-token blocks that the model "
            f"runner split into {self.expected}-token kernel pages, but the {self.component} "
            f"uses {self.found}-token pages. Its attention would read the wrong KV pages: "
            "draft tokens after the first would be rejected (acceptance collapses) while the "
            "output stays correct. Fix: run with KVCONFIG_MODE=enforce (the default), or set "
            f"--block-size {self.expected}, or give the drafter a backend that accepts "
            f"{self.expected}-token pages."
        )
        if self.detail:
            text = f"{text} {self.detail}"
        return text
