"""Many files read in forked workers (kvconfig.cli.prefetch): the same outcomes, in the
same order, as read one by one; the secrets a worker learned are masked here too; no
worker is left behind."""

from __future__ import annotations

import contextlib
import io
import multiprocessing
import threading
from pathlib import Path

import pytest

from kvconfig import secrets
from kvconfig.cli import main, prefetch
from kvconfig.cli import targets as T

CORPUS = Path(__file__).parent / "realworld" / "files"


def _two_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two cores, and no other thread (one an earlier test left would keep the files
    read here)."""
    monkeypatch.setattr(prefetch.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(threading, "active_count", lambda: 1)


def _lint(folder: Path, monkeypatch: pytest.MonkeyPatch, parallel: bool) -> tuple[int, str, str]:
    _two_cores(monkeypatch)
    monkeypatch.setattr(prefetch, "MIN_FILES", 2 if parallel else 10**9)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["lint", "--platform", "H100", "--format", "json", str(folder)], out)
    return code, out.getvalue(), err.getvalue()


def test_the_corpus_lints_alike_read_in_workers_or_here(monkeypatch: pytest.MonkeyPatch) -> None:
    here = _lint(CORPUS, monkeypatch, parallel=False)
    workers = _lint(CORPUS, monkeypatch, parallel=True)
    assert workers == here
    assert multiprocessing.active_children() == []


def test_a_secret_a_worker_read_is_masked_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "s3cr3t-value-read-in-a-worker"
    for k in range(6):
        (tmp_path / f"c{k}.yaml").write_text(
            "services:\n  vllm:\n    image: vllm/vllm-openai:v0.33.0\n"
            f"    environment:\n      MY_API_KEY: {token}{k}\n"
            "    command: --model Qwen/Qwen3-8B --block-size 7\n"
        )
    _two_cores(monkeypatch)
    monkeypatch.setattr(prefetch, "MIN_FILES", 2)
    secrets.forget()
    files = [T.Walked(str(p), str(tmp_path)) for p in sorted(tmp_path.iterdir())]
    read = prefetch.read_all(files, None)
    assert sorted(read) == list(range(6))
    assert all(items is not None and error is None for items, error in read.values())
    assert isinstance(read[0][0][0].target, T.Walked)  # the parent's own target, put back
    assert f"{token}3" in secrets.seen()
    assert token not in secrets.redact(f"the key is {token}5")
    assert multiprocessing.active_children() == []
