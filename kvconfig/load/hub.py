"""Hugging Face model ids: their ``config.json``, from the local cache or the Hub.

An id (``org/name``, at ``--revision`` or ``main``) resolves to the cache snapshot
folder that holds its ``config.json``; that is the only file kvconfig reads (and the
drafter's). By default only the local cache is read; with ``download=True`` (the CLI's
``--download``, or ``KVCONFIG_DOWNLOAD=1``) a missing ``config.json`` is fetched with
``huggingface_hub.hf_hub_download``, which honours ``HF_HOME``, ``HF_HUB_CACHE``,
``HF_HUB_OFFLINE``, ``HF_ENDPOINT``, ``HF_TOKEN`` and ``HF_HUB_ETAG_TIMEOUT`` itself.

A cache hit is read without importing ``huggingface_hub`` (it costs a few hundred
milliseconds): ``cached_config`` follows the client's cache layout
(``models--org--name/refs/REVISION`` -> ``snapshots/COMMIT/config.json``) and its rules
for the cache folder; ``tests/test_inputs_hub.py`` checks it against the client's
``try_to_load_from_cache``. Everything else goes through the client, and every failure
becomes one ``InputError`` line that says what to do.

``ModelPaths`` maps the paths a manifest uses (``/mnt/models/qwen3-8b``) to folders on
this machine (``--model-path /mnt/models=./models``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from kvconfig.errors import InputError, ModelUnavailable

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
DEFAULT_ENDPOINT = "https://huggingface.co"


def is_hub_id(value: str) -> bool:
    """Whether ``value`` reads as a Hub model id rather than a path: ``org/name``, or a
    name alone (``gpt2``; vLLM looks for a folder of that name where the server starts,
    then asks the Hub), not a number (a value put where the model goes)."""
    if ".." in value or value.endswith((".", "-")):
        return False
    return bool(_ID.match(value)) or (bool(_NAME.match(value)) and not value.isdigit())


def download_enabled(flag: bool | None = None) -> bool:
    """``--download`` given, or ``KVCONFIG_DOWNLOAD=1`` in the environment."""
    if flag is not None:
        return flag
    return os.environ.get("KVCONFIG_DOWNLOAD", "").strip().lower() in ("1", "true", "yes", "on")


def cache_dir() -> Path:
    """The Hub cache folder, by huggingface_hub's rules (``constants.HF_HUB_CACHE``)."""
    home = os.path.expandvars(
        os.path.expanduser(
            os.environ.get(
                "HF_HOME",
                os.path.join(
                    os.environ.get(
                        "XDG_CACHE_HOME", os.path.join(os.path.expanduser("~"), ".cache")
                    ),
                    "huggingface",
                ),
            )
        )
    )
    legacy = os.environ.get("HUGGINGFACE_HUB_CACHE", os.path.join(home, "hub"))
    return Path(os.path.expandvars(os.path.expanduser(os.environ.get("HF_HUB_CACHE", legacy))))


def cached_config(repo_id: str, revision: str | None = None) -> Path | None:
    """The cached ``config.json`` of ``repo_id`` at ``revision``, or None (no network)."""
    repo = cache_dir() / ("models--" + repo_id.replace("/", "--"))
    revision = revision or "main"
    ref = repo / "refs" / revision
    if ref.is_file():
        try:
            revision = ref.read_text(encoding="utf-8").strip()
        except OSError:
            return None
    path = repo / "snapshots" / revision / "config.json"
    return path if path.is_file() else None


def _endpoint() -> str:
    return os.environ.get("HF_ENDPOINT", DEFAULT_ENDPOINT).rstrip("/")


def _chain(err: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    seen: BaseException | None = err
    while seen is not None and seen not in out:
        out.append(seen)
        seen = seen.__cause__ or seen.__context__
    return out


def _names(err: BaseException) -> set[str]:
    return {cls.__name__ for e in _chain(err) for cls in type(e).__mro__}


def resolve(
    repo_id: str,
    *,
    revision: str | None = None,
    download: bool | None = None,
    source: str = "",
    line: int | None = None,
    key: str = "model",
) -> Path:
    """The folder holding ``repo_id``'s ``config.json``; raises InputError otherwise."""
    cached = cached_config(repo_id, revision)
    if cached is not None:
        return cached.parent
    at = f" at revision {revision!r}" if revision else ""

    def fail(message: str, hint: str) -> InputError:
        return InputError(message, source=source, line=line, key=key, hint=hint)

    if not download_enabled(download):
        raise ModelUnavailable(
            f"{repo_id!r}{at} is not in the Hugging Face cache ({cache_dir()})",
            source=source,
            line=line,
            key=key,
            hint="pass --download (or set KVCONFIG_DOWNLOAD=1) to fetch its config.json, or "
            "map it to a local folder with --model-path",
        )
    try:
        from huggingface_hub import hf_hub_download
    except ImportError:  # pragma: no cover - a dependency of kvconfig
        raise fail("huggingface_hub is not installed", "pip install huggingface_hub") from None
    deadline = _deadline()
    outcome: list[Any] = []

    def fetch() -> None:
        try:
            outcome.append(hf_hub_download(repo_id, "config.json", revision=revision))
        except Exception as err:  # every failure of the client becomes one line
            outcome.append(err)

    import threading

    worker = threading.Thread(target=fetch, name="kvconfig-hub", daemon=True)
    worker.start()
    worker.join(deadline)
    if not outcome:
        raise fail(
            f"the Hub at {_endpoint()} did not answer within {deadline:g} s for {repo_id!r}{at}",
            "retry, raise KVCONFIG_HUB_TIMEOUT (seconds), or set HF_ENDPOINT to a reachable mirror",
        )
    if isinstance(outcome[0], Exception):
        raise _hub_error(outcome[0], repo_id, at, fail)
    return Path(outcome[0]).parent


def _deadline() -> float:
    """Seconds kvconfig waits for one ``config.json`` (``KVCONFIG_HUB_TIMEOUT``, default
    30): huggingface_hub retries a timed-out request with a longer timeout of its own."""
    try:
        value = float(os.environ.get("KVCONFIG_HUB_TIMEOUT", "30"))
    except ValueError:
        raise InputError(
            f"KVCONFIG_HUB_TIMEOUT={os.environ['KVCONFIG_HUB_TIMEOUT']!r} is not a number",
            key="KVCONFIG_HUB_TIMEOUT",
            hint="set it to seconds, e.g. 30",
        ) from None
    return max(value, 0.1)


def _hub_error(
    err: Exception, repo_id: str, at: str, make: Callable[[str, str], InputError]
) -> InputError:
    """One line for a failure of ``hf_hub_download``."""
    names = _names(err)
    endpoint = _endpoint()
    offline = os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")
    if "GatedRepoError" in names:
        return make(
            f"{repo_id!r} is gated on the Hub: its files need an accepted licence and a token",
            f"accept its terms at {endpoint}/{repo_id} and set HF_TOKEN to a token of that "
            "account, or map it to a local folder with --model-path",
        )
    if "RevisionNotFoundError" in names:
        return make(
            f"{repo_id!r} has no revision{at.removeprefix(' at revision')} on the Hub",
            "check --revision (a branch, tag or commit of the repository)",
        )
    if "RepositoryNotFoundError" in names:
        return make(
            f"{repo_id!r} does not exist on the Hub, or is private",
            "check the id; for a private repository set HF_TOKEN to a token that can read it",
        )
    if "EntryNotFoundError" in names and "LocalEntryNotFoundError" not in names:
        return make(
            f"{repo_id!r}{at} has no config.json",
            "kvconfig reads a model's config.json: point it at a repository that has one",
        )
    if offline or "OfflineModeIsEnabled" in names:
        return make(
            f"{repo_id!r}{at} is not in the Hugging Face cache, and HF_HUB_OFFLINE=1 forbids "
            "downloads",
            "unset HF_HUB_OFFLINE to download its config.json, or map it to a local folder "
            "with --model-path",
        )
    if any("Timeout" in n for n in names):
        timeout = os.environ.get("HF_HUB_ETAG_TIMEOUT", "10")
        return make(
            f"the Hub at {endpoint} did not answer within {timeout} s for {repo_id!r}",
            "retry, raise HF_HUB_ETAG_TIMEOUT, or set HF_ENDPOINT to a reachable mirror",
        )
    if names & {"ConnectError", "ConnectionError", "NetworkError", "ProxyError"} or (
        "LocalEntryNotFoundError" in names
    ):
        return make(
            f"cannot reach the Hub at {endpoint} to fetch {repo_id!r}{at}",
            "check the network or HF_ENDPOINT, or map the model to a local folder with "
            "--model-path",
        )
    status = next(
        (
            getattr(getattr(e, "response", None), "status_code", None)
            for e in _chain(err)
            if getattr(getattr(e, "response", None), "status_code", None)
        ),
        None,
    )
    if status is not None:
        return make(
            f"the Hub at {endpoint} answered HTTP {status} for {repo_id!r}{at}",
            "retry later, or map the model to a local folder with --model-path",
        )
    first = str(err).splitlines()[0] if str(err) else type(err).__name__
    return make(
        f"cannot fetch {repo_id!r}{at}: {type(err).__name__}: {first[:120]}",
        "map the model to a local folder with --model-path",
    )


# --------------------------------------------------------------------------- --model-path


class ModelPaths(NamedTuple):
    """``--model-path PATTERN=DIR`` rules: a path (or id) that starts with PATTERN, at a
    ``/`` boundary, is read from DIR instead; the longest PATTERN wins."""

    rules: tuple[tuple[str, Path], ...] = ()
    mounts: frozenset[str] = frozenset()
    """The patterns that are a container's bind mounts, not ``--model-path``: their folder
    may be filled only when the container runs (a download step, a README's)."""

    @classmethod
    def parse(cls, items: Sequence[str], cwd: Path | None = None) -> ModelPaths:
        """Rules from ``PATTERN=DIR`` strings; DIR is relative to ``cwd``."""
        rules: list[tuple[str, Path]] = []
        for item in items:
            pattern, eq, folder = item.partition("=")
            pattern = pattern.strip().rstrip("/") or "/"
            if not eq or not folder.strip() or not pattern:
                raise InputError(
                    f"expected PATTERN=DIR, got {item!r}",
                    key="--model-path",
                    hint="e.g. --model-path /mnt/models=./models",
                )
            path = Path(os.path.expanduser(folder.strip()))
            if not path.is_absolute():
                path = (cwd or Path.cwd()) / path
            rules.append((pattern, path))
        rules.sort(key=lambda r: len(r[0]), reverse=True)
        return cls(tuple(rules))

    def map(self, value: str) -> Path | None:
        """The local folder for ``value``, or None when no rule matches."""
        found = self.rule(value)
        return None if found is None else found[1]

    def rule(self, value: str) -> tuple[str, Path] | None:
        """(the pattern, the local folder) of the rule ``value`` maps by, if any."""
        for pattern, folder in self.rules:
            if value == pattern:
                return pattern, folder
            if value.startswith(pattern + "/") or pattern == "/":
                return pattern, folder / value[len(pattern) :].lstrip("/")
        return None
