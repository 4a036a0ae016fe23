"""Installing the hooks: cheap import, modes, idempotence, version checks, rollback."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kvconfig import hooks
from kvconfig.hooks import _install
from kvconfig.hooks._state import parse_mode

ROOT = Path(__file__).resolve().parents[1]


def test_importing_hooks_imports_neither_vllm_nor_torch() -> None:
    code = (
        "import sys; from kvconfig import hooks; s = hooks.status(); "
        "print('vllm' in sys.modules, 'torch' in sys.modules, s.mode, s.active)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert out.stdout.split() == ["False", "False", "off", "False"]


@pytest.mark.parametrize(
    ("value", "mode"),
    [(None, "enforce"), ("", "enforce"), ("strict", "strict"), (" WARN ", "warn"), ("off", "off")],
)
def test_mode_names(value: str | None, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KVCONFIG_MODE", raising=False)
    assert parse_mode(value) == mode


def test_mode_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KVCONFIG_MODE", "strict")
    assert parse_mode(None) == "strict"


def test_unknown_mode_keeps_the_checks_on(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("KVCONFIG_MODE", "enforced")
    log = logging.getLogger("vllm.kvconfig")
    log.addHandler(caplog.handler)
    try:
        assert parse_mode(None) == "enforce"
    finally:
        log.removeHandler(caplog.handler)
    assert any("'enforced' is not one of" in r.getMessage() for r in caplog.records)


# --- against vLLM's real modules -------------------------------------------------------

needs_vllm = pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="needs vllm")


def targets() -> list[tuple[Any, Any]]:
    """(holder, attribute value) of every patch target, as stored now."""
    return [_install._resolve(t.module, t.owner, t.attr) for t in _install.TARGETS]


def wrapped() -> list[bool]:
    return [hasattr(value, _install.MARK) for value in current_values()]


@pytest.fixture
def clean() -> Iterator[None]:
    """No hooks before or after the test."""
    pytest.importorskip("vllm")
    from tools.catalog.emulate import load

    for t in _install.TARGETS:
        load(t.module)
    hooks.uninstall()
    assert wrapped() == [False] * len(_install.TARGETS)
    yield
    hooks.uninstall()


@needs_vllm
def test_register_twice_patches_once(clean: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KVCONFIG_MODE", raising=False)
    originals = [value for _, value in targets()]
    hooks.register()
    first = [value for _, value in targets()]
    hooks.register()
    second = [value for _, value in targets()]
    assert all(a is b for a, b in zip(first, second, strict=True))
    assert [getattr(w, _install.MARK) for w in second] == originals
    assert not any(hasattr(o, _install.MARK) for o in originals)
    s = hooks.status()
    assert (s.mode, s.active, s.supported) == ("enforce", True, True)
    assert s.patched == tuple(t.name for t in _install.TARGETS)


@needs_vllm
def test_wrappers_keep_vllms_signatures(clean: None) -> None:
    before = [inspect.signature(v) for _, v in targets()]
    hooks.install("enforce")
    assert [inspect.signature(v) for _, v in targets()] == before


@needs_vllm
def test_changing_mode_does_not_repatch_and_off_restores(clean: None) -> None:
    originals = [value for _, value in targets()]
    hooks.install("strict")
    first = [value for _, value in targets()]
    assert hooks.install("warn").mode == "warn"
    assert all(a is b for a, b in zip(first, [v for _, v in targets()], strict=True))
    s = hooks.install("off")
    assert (s.mode, s.active) == ("off", False)
    assert all(a is b for a, b in zip(originals, [v for _, v in targets()], strict=True))


def _set_attn_without_target_groups(
    self: Any, model_state: Any, kv_cache_config: Any, block_tables: Any, buffers: Any
) -> None:
    """``set_attn`` as a vLLM that changed its parameters might declare it."""


@needs_vllm
@pytest.mark.parametrize(
    "change",
    ["signature", "missing", "call"],
)
def test_a_changed_vllm_falls_back_to_warn_with_nothing_patched(
    clean: None, monkeypatch: pytest.MonkeyPatch, change: str, caplog: pytest.LogCaptureFixture
) -> None:
    from vllm.v1.worker.gpu import attn_utils
    from vllm.v1.worker.gpu.spec_decode import speculator

    if change == "signature":
        monkeypatch.setattr(
            speculator.DraftModelSpeculator, "set_attn", _set_attn_without_target_groups
        )
        expect = "DraftModelSpeculator.set_attn takes (self, model_state"
    elif change == "missing":
        monkeypatch.delattr(attn_utils, "prepare_kernel_block_sizes")
        expect = "attn_utils.prepare_kernel_block_sizes is missing"
    else:
        monkeypatch.setattr(speculator, "init_attn_backend", lambda *a, **k: None)
        expect = "the speculator no longer calls"
    log = logging.getLogger("vllm.kvconfig")
    log.addHandler(caplog.handler)
    try:
        s = hooks.install("enforce")
    finally:
        log.removeHandler(caplog.handler)
    assert (s.mode, s.requested, s.active, s.patched) == ("warn", "enforce", False, ())
    assert expect in s.reason
    assert not any(hasattr(v, _install.MARK) for v in current_values())
    line = next(r for r in caplog.records if expect in r.getMessage())
    assert line.levelno == logging.ERROR
    assert "is not checked; KVCONFIG_MODE=enforce: starting with it UNCHECKED" in line.getMessage()
    assert any(expect in u and "NOT installed" in u for u in s.unchecked)


@needs_vllm
def test_strict_refuses_a_vllm_it_cannot_patch(
    clean: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from vllm.v1.worker.gpu import attn_utils

    from kvconfig.errors import HooksFailed

    monkeypatch.delattr(attn_utils, "prepare_kernel_block_sizes")
    monkeypatch.setenv("KVCONFIG_MODE", "strict")
    with pytest.raises(HooksFailed) as err:
        hooks.register()  # vLLM's plugin loader does not catch it: vLLM does not start
    assert "attn_utils.prepare_kernel_block_sizes is missing" in str(err.value)
    assert "KVCONFIG_MODE=strict refuses to start" in str(err.value)
    assert not any(hasattr(v, _install.MARK) for v in current_values())
    assert hooks.status().active is False


@needs_vllm
@pytest.mark.parametrize("mode", ["strict", "enforce", "warn"])
def test_a_connector_that_cannot_be_patched(
    clean: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, mode: str
) -> None:
    """strict: nothing stays patched and start-up stops; enforce and warn: the other hooks
    are installed, the connector checks are reported unchecked."""
    from vllm.distributed.kv_transfer.kv_connector.v1.nixl import base_worker

    from kvconfig.errors import HooksFailed
    from kvconfig.hooks import _connectors

    _connectors.uninstall()
    monkeypatch.delattr(base_worker.NixlBaseConnectorWorker, "add_remote_agent")
    if mode == "strict":
        with pytest.raises(HooksFailed, match="add_remote_agent is missing"):
            hooks.install(mode)
        assert wrapped() == [False] * len(_install.TARGETS) and not _connectors.patched()
        return
    log = logging.getLogger("vllm.kvconfig")
    log.addHandler(caplog.handler)
    try:
        s = hooks.install(mode)
    finally:
        log.removeHandler(caplog.handler)
    assert (s.mode, s.active) == (mode, True) and not _connectors.patched()
    assert any("NIXL handshake" in u and "add_remote_agent is missing" in u for u in s.unchecked)
    assert any(
        r.levelno == logging.ERROR and "installing the KV-connector checks" in r.getMessage()
        for r in caplog.records
    )


def current_values() -> list[Any]:
    """Every target's attribute as it is now (None where it is missing)."""
    out = []
    for t in _install.TARGETS:
        holder: Any = importlib.import_module(t.module)
        if t.owner is not None:
            holder = getattr(holder, t.owner)
        out.append(getattr(holder, t.attr, None))
    return out


@needs_vllm
def test_a_failing_patch_is_rolled_back(clean: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from kvconfig.hooks import _enforce

    def broken(original: Any) -> Any:
        raise RuntimeError("cannot wrap")

    monkeypatch.setitem(_enforce.FACTORIES, "wrap_initialize_kv_cache_v1", broken)
    s = hooks.install("enforce")
    assert (s.mode, s.active) == ("warn", False)
    assert "rolled back" in s.reason and "cannot wrap" in s.reason
    assert wrapped() == [False] * len(_install.TARGETS)
    from kvconfig.errors import HooksFailed

    with pytest.raises(HooksFailed, match="cannot wrap"):
        hooks.install("strict")
    assert wrapped() == [False] * len(_install.TARGETS)


@needs_vllm
def test_another_vllm_version_is_checked_then_patched(
    clean: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import vllm

    monkeypatch.setattr(vllm, "__version__", "0.34.0")
    s = hooks.install("enforce")
    assert (s.vllm_version, s.supported, s.active, s.mode) == ("0.34.0", False, True, "enforce")


@needs_vllm
@pytest.mark.parametrize("mode", ["strict", "enforce", "warn"])
def test_register_fails_closed_in_strict_only(
    clean: None, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """An unexpected failure inside kvconfig's installation: strict raises (vLLM's plugin
    loader lets it through, vLLM does not start); enforce and warn log and report it."""
    from kvconfig.errors import HooksFailed

    def boom(mode: str | None) -> None:
        raise RuntimeError("unexpected")

    monkeypatch.setattr(_install, "install_locked", boom)
    monkeypatch.setenv("KVCONFIG_MODE", mode)
    before = len(hooks.status().unchecked)
    if mode == "strict":
        with pytest.raises(HooksFailed, match="RuntimeError: unexpected"):
            hooks.register()
    else:
        hooks.register()
    s = hooks.status()
    assert s.active is False
    assert len(s.unchecked) == before + 1 and "RuntimeError: unexpected" in s.unchecked[-1]
