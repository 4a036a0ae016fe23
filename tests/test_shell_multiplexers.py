"""Servers started through tmux and GNU screen, against the real programs.

Each script runs in bash with a ``vllm`` first on PATH that appends its arguments and its
``KV_A`` to a file (its output goes to a detached terminal, not to the script). tmux and
screen get folders of their own for their sockets, and every server they start is ended
after the test. The vLLM commands that ran are compared with kvconfig's reading of the
same script, as ``tests/test_shell_differential.py`` compares them for bash and dash.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from kvconfig.load.shell.script import read_script

_VLLM = """#!/bin/sh
r=
for a; do r="$r$a$(printf '\\037')"; done
printf '%s\\002%s\\n' "$r" "${KV_A-<unset>}" >> RUNS
"""


@pytest.fixture
def where(tmp_path: Path) -> Iterator[Path]:
    for tool in ("tmux", "screen"):
        assert shutil.which(tool), f"install {tool} (.ci/run installs it)"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "vllm").write_text(_VLLM.replace("RUNS", str(tmp_path / "runs")))
    (bindir / "vllm").chmod(0o755)
    for d in ("work", "tmux", "screen"):
        (tmp_path / d).mkdir()
    # a pane's shell is a login shell, whose /etc/profile sets PATH anew: the user's
    # profile puts vllm on it, as a virtual environment's would
    (tmp_path / "work" / ".bash_profile").write_text(f"PATH={bindir}:$PATH\n")
    (tmp_path / "screen").chmod(0o700)
    yield tmp_path
    env = _env(tmp_path)
    for socket in ("default", "other"):
        subprocess.run(
            ["tmux", "-L", socket, "kill-server"], env=env, capture_output=True, check=False
        )
    subprocess.run(["screen", "-wipe"], env=env, capture_output=True, check=False)


def _env(root: Path) -> dict[str, str]:
    return {
        "PATH": f"{root / 'bin'}:/usr/bin:/bin",
        "HOME": str(root / "work"),
        "SHELL": "/bin/bash",
        "TERM": "xterm",
        "TMUX_TMPDIR": str(root / "tmux"),
        "SCREENDIR": str(root / "screen"),
    }


def _runs(root: Path, expected: int) -> list[tuple[tuple[str, ...], str]]:
    """What the servers recorded, once ``expected`` have (or after 10 s), and half a
    second more for any kvconfig did not expect."""
    path = root / "runs"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().count("\n") >= expected:
            break
        time.sleep(0.1)
    time.sleep(0.5)
    out = []
    for line in path.read_text().splitlines() if path.exists() else []:
        argv, _, kv_a = line.partition("\002")
        out.append((("vllm", *argv.split("\037")[:-1]), kv_a))
    return out


SCRIPTS = {
    "tmux new-session, one argument or several": (
        "export KV_A=x; M=m\n"
        'tmux new-session -d -s a "vllm serve $M --port 1 && sleep 5"\n'
        'tmux new -d -s b -e KV_A=given vllm serve "$M" --port 2\n'
        'tmux new-session -s c "vllm serve $M --port 9"  # attaches: no terminal, no server\n'
        'tmux -L other new-session -d -c /tmp "vllm serve m --port 3"',
        3,
    ),
    "tmux new-window and send-keys": (
        "tmux new-session -d -s w; sleep 0.3\n"
        'tmux new-window -t w "vllm serve m --port 4"\n'
        'tmux send-keys -t w:0 "vllm serve m --port" Space 5 Enter\n'
        'tmux send-keys -t w:0 "vllm serve m --port 6"  # no Enter: typed, not run',
        2,
    ),
    "screen -dm": (
        "export KV_A=y\n"
        "screen -dmS s vllm serve m --port 7\n"
        'screen -d -m -S t sh -c "vllm serve m --port 8"\n'
        "screen -S u -X stuff 'vllm serve m --port 10'",
        2,
    ),
}


@pytest.mark.parametrize("name", SCRIPTS)
def test_servers_started_through_multiplexers(name: str, where: Path) -> None:
    script, expected = SCRIPTS[name]
    env = _env(where)
    reading = read_script(script, {"HOME": env["HOME"]}, dialect="bash")
    said = [c for c in reading.commands if os.path.basename(c.words[0]) == "vllm"]
    subprocess.run(
        ["bash", "-c", script],
        env=env,
        cwd=where / "work",
        capture_output=True,
        timeout=20,
        check=False,
    )
    runs = _runs(where, expected)
    assert len(said) == expected, [c.words for c in said]
    assert Counter(argv for argv, _ in runs) == Counter(c.words for c in said), runs
    for c in said:  # a value kvconfig knows is the one the server saw
        value = c.env.get("KV_A")
        if value is not None:
            assert (c.words, value) in runs, (c.words, c.env, runs)
