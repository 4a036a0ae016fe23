"""How often a script starts a program in a loop, against real bash and dash.

Each script runs with ``N`` set to 0, 1 and 3, a ``vllm`` first on PATH recording each
start. Read with ``N`` only known at run time, kvconfig must keep a command whose count
``N`` decides beyond one (a loop's rounds only known at run time) with why
(``Command.rounds``), and no other command so; read with ``N=3``, it must start what the
shell starts, every count known.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kvconfig.load.shell.script import read_script

_VLLM = '#!/bin/sh\necho "$*" >> RUNS\n'

SCRIPTS = {
    "for over seq": ("sh", 'for i in $(seq 1 "$N"); do vllm serve m; done'),
    "while counting": ("sh", 'i=0\nwhile [ "$i" -lt "$N" ]; do vllm serve m; i=$((i + 1)); done'),
    "until counting": ("sh", 'i=0\nuntil [ "$i" -ge "$N" ]; do vllm serve m & i=$((i + 1)); done'),
    "arithmetic for": ("bash", "for ((i = 0; i < N; i++)); do vllm serve m; done"),
    "known words": ("sh", "for m in a b; do vllm serve $m; done"),
    "a loop over the arguments": (
        "sh",
        'set -- $(seq 1 "$N")\nfor a; do vllm serve m; done',
    ),
    "a run-time branch is no loop": ("sh", 'if [ "$N" -gt 1 ]; then vllm serve m; fi'),
    "a server before the loop": (
        "sh",
        'vllm serve a &\nfor i in $(seq 1 "$N"); do vllm serve b; done',
    ),
    "in a function the loop calls": (
        "sh",
        'start() { vllm serve "$1" & }\nfor i in $(seq 1 "$N"); do start m; done',
    ),
}


def _bash_counts(shell: str, script: str, n: int, tmp_path: Path) -> dict[str, int]:
    runs = tmp_path / f"runs-{shell}-{n}"
    (tmp_path / "vllm").write_text(_VLLM.replace("RUNS", str(runs)))
    (tmp_path / "vllm").chmod(0o755)
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin", "HOME": str(tmp_path), "N": str(n)}
    subprocess.run([shell, "-c", script + "\nwait"], env=env, cwd=tmp_path, timeout=20,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)  # fmt: skip
    counts: dict[str, int] = {}
    for line in runs.read_text().splitlines() if runs.exists() else []:
        model = line.split()[-1]
        counts[model] = counts.get(model, 0) + 1
    return counts


@pytest.mark.parametrize("name", SCRIPTS)
def test_a_loops_rounds(name: str, tmp_path: Path) -> None:
    dialect, script = SCRIPTS[name]
    shells = ["bash"] if dialect == "bash" else ["bash", "dash"]
    for shell in shells:
        by_n = {n: _bash_counts(shell, script, n, tmp_path) for n in (0, 1, 3)}
        models = {m for counts in by_n.values() for m in counts}
        blind = read_script(script, {"HOME": str(tmp_path), "N": None}, dialect=dialect)
        for model in models:
            counts = {by_n[n].get(model, 0) for n in by_n}
            said = [c for c in blind.commands if c.words[0] == "vllm" and c.words[-1] == model]
            if len(counts) == 1:
                assert len(said) == counts.pop(), (shell, model, said)
                assert all(not c.rounds for c in said), (shell, model, said)
            elif max(counts) > 1:
                assert said and all(c.rounds for c in said), (shell, model, said)
            else:
                assert all(not c.rounds for c in said), (shell, model, said)
        known = read_script(script, {"HOME": str(tmp_path), "N": "3"}, dialect=dialect)
        started: dict[str, int] = {}
        for c in known.commands:
            if c.words[0] == "vllm":
                assert not c.rounds, (shell, c)
                started[c.words[-1]] = started.get(c.words[-1], 0) + 1
        assert started == by_n[3], (shell, started, by_n[3])
