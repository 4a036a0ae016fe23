"""A script's EXIT trap that ends its process group, against real bash.

Each script runs in a session of its own (so ``kill 0`` reaches nothing else), with a
``vllm`` first on PATH that takes a second to start, as a server does, before it records
its arguments. What was recorded once the script and its servers are done is compared
with kvconfig's reading: a server the trap ends as it starts records nothing.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from kvconfig.load.shell.script import read_script

_VLLM = """#!/bin/sh
sleep 1
echo "$*" >> RUNS
"""

SCRIPTS = {
    "the trap ends servers nothing waits for": "trap 'echo c; kill 0' EXIT\n"
    "vllm serve a &\nvllm serve b &",
    "echo does not keep them": "trap 'kill 0' EXIT; vllm serve a & echo started",
    "wait keeps them": "trap 'kill 0' EXIT; vllm serve a & wait",
    "a foreground program keeps them": "trap 'kill 0' EXIT; vllm serve a & sleep 1.5",
    "a reset trap ends nothing": "trap 'kill 0' EXIT; trap - EXIT; vllm serve a &",
    "trap 0 resets it too": "trap 'kill 0' EXIT; trap 0; vllm serve a &",
    "exec runs no trap": "trap 'kill 0' EXIT; vllm serve a & exec vllm serve b",
    "kill -- -$$ and a signal list": "trap 'kill -- -$$' INT TERM EXIT; vllm serve a &",
    "another trap ends nothing": "trap 'echo bye' EXIT; vllm serve a &",
    "after the last wait": "trap 'kill 0' EXIT; vllm serve a & wait; vllm serve b &",
}


@pytest.mark.parametrize("name", SCRIPTS)
def test_an_exit_trap_that_kills_the_group(name: str, tmp_path: Path) -> None:
    script = SCRIPTS[name]
    (tmp_path / "vllm").write_text(_VLLM.replace("RUNS", str(tmp_path / "runs")))
    (tmp_path / "vllm").chmod(0o755)
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin", "HOME": str(tmp_path)}
    proc = subprocess.Popen(
        ["bash", "-c", script], env=env, cwd=tmp_path, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        proc.wait(timeout=20)
        time.sleep(1.8)  # a server the trap left alone has recorded by now
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    runs = tmp_path / "runs"
    ran = Counter(
        tuple(line.split()) for line in (runs.read_text() if runs.exists() else "").splitlines()
    )
    reading = read_script(script, {"HOME": str(tmp_path)}, dialect="bash")
    said = Counter(c.words[1:] for c in reading.commands if c.words[0] == "vllm")
    assert ran == said, (ran, said)
