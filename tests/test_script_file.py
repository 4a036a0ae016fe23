"""Launch scripts (``#!/bin/bash`` ... ``vllm serve ... &``) read as engines: the servers
kvconfig finds are the ones bash starts (a stand-in ``vllm`` on PATH records them), and a
pair's roles are the ones its ``kv_role`` names."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from kvconfig.errors import InputError
from kvconfig.load.engines import engines_in
from kvconfig.load.reading import reading_of

PAIR = """#!/bin/bash
MODEL=${MODEL_NAME:-Qwen/Qwen3-8B}
GPUS=${GPUS:-0,1}
IFS=',' read -ra GPU_ARRAY <<< "$GPUS"
start() {
    local role=$1 port=$2
    CUDA_VISIBLE_DEVICES=$3 vllm serve $MODEL --port $port \\
        --kv-transfer-config "{\\"kv_connector\\":\\"NixlConnector\\",\\"kv_role\\":\\"$role\\"}" &
}
start kv_producer 8100 0
start kv_consumer 8200 1
wait
"""

ONE = """#!/usr/bin/env sh
set -e
if [ -n "$BLOCK" ]; then EXTRA="--block-size $BLOCK"; fi
exec vllm serve Qwen/Qwen3-8B $EXTRA --tensor-parallel-size 2
"""


def _bash_runs(script: str, tmp: Path, env: dict[str, str]) -> list[list[str]]:
    """The argument lists bash passes to ``vllm`` (a stand-in on PATH records them)."""
    shell = shutil.which("bash")
    if shell is None:  # pragma: no cover - bash is on every machine the tests run on
        pytest.fail("bash is needed to compare with")
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    record = tmp / "runs"
    record.mkdir()
    fake = bin_dir / "vllm"
    fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > "{record}/$$"\n')
    fake.chmod(0o755)
    path = tmp / "run.sh"
    path.write_text(script)
    clean = {"PATH": f"{bin_dir}:/usr/bin:/bin", **env}
    subprocess.run([shell, str(path)], env=clean, check=True, timeout=30)
    return sorted(p.read_text().splitlines() for p in record.iterdir())


@pytest.mark.parametrize(
    ("script", "env"),
    [(PAIR, {}), (PAIR, {"MODEL_NAME": "/models/m"}), (ONE, {}), (ONE, {"BLOCK": "32"})],
)
def test_servers_are_the_ones_bash_starts(tmp_path: Path, script: str, env: dict[str, str]) -> None:
    ran = _bash_runs(script, tmp_path, env)
    found = engines_in(script, "run.sh", env=env)
    assert sorted(["serve", *e.argv] for e in found) == ran


def test_kv_role_names_the_role() -> None:
    found = engines_in(PAIR, "run.sh")
    got = [(reading_of(e).role, reading_of(e).kv_role, e.name) for e in found]
    assert got == [
        ("prefill", "kv_producer", "run.sh#1"),
        ("decode", "kv_consumer", "run.sh#2"),
    ]


def test_servers_one_after_the_other_are_refused() -> None:
    script = "#!/bin/bash\nvllm serve a\nvllm serve b\n"
    with pytest.raises(InputError, match="one after the other"):
        engines_in(script, "run.sh")


def test_detached_containers_run_on_together() -> None:
    """``docker run -d`` returns once the container is started (docker run's reference,
    ``--detach``): two detached vLLM containers both serve, as two ``&`` servers do; the
    same two in the foreground are one after the other. ``sudo`` runs the command after
    its options (sudo(8))."""
    image = "vllm/vllm-openai:v0.33.0"
    script = f"#!/bin/bash\nsudo docker run -d {image} m --port 1\ndocker run --detach {image} n\n"
    assert [e.argv for e in engines_in(script, "run.sh")] == [("m", "--port", "1"), ("n",)]
    with pytest.raises(InputError, match="one after the other"):
        engines_in(script.replace(" -d", "").replace(" --detach", ""), "run.sh")
    with pytest.raises(InputError, match="starts no 'vllm serve'"):
        engines_in(f"#!/bin/bash\nsudo -l docker run -d {image} m\n", "run.sh")


@pytest.mark.parametrize(("image", "starts"), [
    ("vllm/vllm-openai:v0.6.3", True),  # a release whose wheel ships the demo server
    ("vllm/vllm-openai:v0.24.0", True),
    ("vllm/vllm-openai:v0.25.0", False),  # the first without it
    ("vllm/vllm-openai:v0.33.0", False),
    ("vllm/vllm-openai:latest", False),  # the newest
    ("example.com/vertex/pytorch-vllm-serve:20240930", True),  # a build of no named release
])  # fmt: skip
def test_the_demo_api_server_runs_where_its_release_ships_it(image: str, starts: bool) -> None:
    """``python -m vllm.entrypoints.api_server``, vLLM's demo server, is in the wheels up
    to ``DEMO_API_SERVER_LAST`` (0.24.0; 0.25.0 has none): an engine of the API server's
    arguments there, bad input (no server) for a release without it; unknown for a build
    whose release is not named, so read."""
    script = (
        f"#!/bin/bash\ndocker run -d --entrypoint python3 {image} "
        "-m vllm.entrypoints.api_server --model Qwen/Qwen3-8B --tensor-parallel-size 2\n"
    )
    (reading,) = [reading_of(e) for e in engines_in(script, "run.sh")]
    if not starts:
        assert "no vllm.entrypoints.api_server" in str(reading.unreadable)
        return
    assert (reading.model, reading.tensor, reading.unreadable) == ("Qwen/Qwen3-8B", 2, None)


def test_a_script_that_stops_first_starts_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """bash leaves at ``exit`` when the variable the script needs is unset; the
    environment is the one passed, never kvconfig's own."""
    script = '#!/bin/bash\nif [ -z "$HF_TOKEN" ]; then exit 1; fi\nvllm serve m &\n'
    monkeypatch.setenv("HF_TOKEN", "from-kvconfig-process")
    with pytest.raises(InputError, match="starts no 'vllm serve'"):
        engines_in(script, "run.sh")
    assert [e.argv for e in engines_in(script, "run.sh", env={"HF_TOKEN": "x"})] == [("m",)]


def test_a_connector_known_only_at_run_time(tmp_path: Path) -> None:
    """``--kv-transfer-config "$(cat FILE)"`` (Dynamo's LMCache graph reads it from a
    ConfigMap): the connector changes the plan, so the verdict is unknown (KV403) and the
    reading shows the word, never bad input or no connector."""
    import io

    from kvconfig.cli.commands import main

    path = tmp_path / "run.sh"
    path.write_text(
        '#!/bin/bash\nvllm serve Qwen/Qwen3-8B --kv-transfer-config "$(cat /etc/kv.json)" &\n'
    )
    qwen = Path(__file__).parent.parent / "examples" / "models" / "qwen3-8b"
    out = io.StringIO()
    argv = ["lint", "--format", "json", "--platform", "H100", "--model-path",
            f"Qwen/Qwen3-8B={qwen}", str(path)]  # fmt: skip
    assert main(argv, stdout=out) == 0
    assert "KV403" in out.getvalue()
    (engine,) = engines_in(path, "run.sh")
    assert reading_of(engine).run_time == {"kv-transfer-config": "$(cat /etc/kv.json)"}
    assert "connector=$(cat /etc/kv.json)" in reading_of(engine).summary()


DYNAMO = """#!/bin/bash
python -m dynamo.frontend --router-mode kv &
CUDA_VISIBLE_DEVICES=0 python3 -m dynamo.vllm --model Qwen/Qwen3-8B %(decode)s&
CUDA_VISIBLE_DEVICES=1 python3 -m dynamo.vllm --model Qwen/Qwen3-8B --is-prefill-worker %(prefill)s
"""


@pytest.mark.parametrize(
    ("decode", "prefill", "want"),
    [
        # --connector shows a launcher from before Dynamo 1.0.0: block 16 for both, the
        # decode worker's --connector defaults to nixl
        ("", "--connector kvbm nixl", [
            ("decode", 16, "NixlConnector"),
            ("prefill", 16, "PdConnector(DynamoConnector,NixlConnector)")]),
        ("--connector none ", "--connector lmcache", [("decode", 16, None),
                                                      ("prefill", 16, "LMCacheConnectorV1")]),
        # no --connector: the current launcher, which leaves both to the arguments
        ("--block-size 64 ", "--block-size 64", [("decode", 64, None), ("prefill", 64, None)]),
    ],
)  # fmt: skip
def test_dynamo_workers_of_a_script(
    decode: str, prefill: str, want: list[tuple[str, int, str | None]]
) -> None:
    """A script's ``dynamo.vllm`` workers are read as Dynamo's launcher reads them: its own
    options taken out, the roles they give (the worker that is not a prefill worker is the
    decode worker), and one launcher's defaults for every worker of the script."""
    text = DYNAMO % {"decode": decode, "prefill": prefill}
    engines = engines_in(text, "run.sh")
    got = []
    for e in engines:
        r = reading_of(e)
        assert r.unreadable is None, r.unreadable
        got.append((e.role, r.block_size, r.connector))
    assert sorted(got, key=str) == sorted(want, key=str)
    assert all("--connector" not in e.argv and "--is-prefill-worker" not in e.argv for e in engines)


ROUTERS = """#!/bin/bash
BS=%s
DYN_KV_CACHE_BLOCK_SIZE=$BS python -m dynamo.frontend --router-mode kv &
python3 -m dynamo.frontend --http-port 8001 &
python -m dynamo.router --endpoint dynamo.prefill.generate --router-block-size 32 &
CUDA_VISIBLE_DEVICES=0 python3 -m dynamo.vllm --model Qwen/Qwen3-8B --block-size $BS
"""


@pytest.mark.parametrize("block", [16, 64])
def test_routers_of_a_script(block: int) -> None:
    """A launch script's Dynamo frontend in kv mode and standalone router are its KV
    routers, each with the environment its command runs in; a round-robin frontend is none."""
    from kvconfig.load.routers import routers_in_file

    got = [(r.kind, r.block_size) for r in routers_in_file(ROUTERS % block, "run.sh")]
    assert got == [("dynamo", block), ("dynamo", 32)]
