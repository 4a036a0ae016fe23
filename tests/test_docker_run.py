"""``docker run`` in a launch script: the docker CLI's options end at the image, the words
after a vLLM image are ``vllm serve``'s arguments (the image's entry point), and only
``-e`` reaches the container's environment (docker/cli ``cli/command/container``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvconfig.errors import InputError
from kvconfig.load.docker_run import container_start
from kvconfig.load.engines import engines_in
from kvconfig.load.reading import reading_of
from tests.test_shell_differential import bindir, real

__all__ = ["bindir"]  # the fixture: a vllm program that prints its arguments

_STARTS = [
    # grouped one-letter options without a value, then ones with a value
    ("docker run -dit --rm -p 8000:8000 vllm/vllm-openai:v0.33.0 m", "vllm/vllm-openai:v0.33.0"),
    # a value attached to a one-letter option, and --opt=value
    ("docker run -eA=1 --ipc=host -v/x:/y vllm/vllm-openai m", "vllm/vllm-openai"),
    # the last letter of a group takes the next word as its value
    ("docker run -itp 80:80 lmcache/vllm-openai:2025 m", "lmcache/vllm-openai:2025"),
    # every other long option takes a value; docker container run is the same command
    ("docker container run --gpus all --shm-size 8g --pid=host vllm/vllm-openai m", None),
    ("docker run -- vllm/vllm-openai m", "vllm/vllm-openai"),
]


@pytest.mark.parametrize(("words", "image"), _STARTS)
def test_the_image_ends_the_options(words: str, image: str | None) -> None:
    started = container_start(words.split())
    assert started is not None
    assert started.image == (image or "vllm/vllm-openai")
    assert list(started.words) == ["vllm", "serve", "m"]
    assert not started.entrypoint


def test_entrypoint_replaces_the_images() -> None:
    started = container_start(
        ["docker", "run", "--entrypoint", "vllm", "img", "serve", "m", "--port", "1"]
    )
    assert started is not None and started.entrypoint
    assert started.words == ("vllm", "serve", "m", "--port", "1")
    shell = container_start(["docker", "run", "--entrypoint", "/bin/zsh", "img", "-c", "x"])
    assert shell is not None and shell.words == ("/bin/zsh", "-c", "x")  # zsh: not read
    # bash -c x runs no vLLM server: the container is not one kvconfig reads
    assert container_start(["docker", "run", "--entrypoint", "/bin/bash", "img", "-c", "x"]) is None
    assert container_start(["docker", "run", "--entrypoint", "sh", "img", "-c", "if ("]) is None


@pytest.mark.parametrize(
    "words",
    [
        "docker run ubuntu Qwen/Qwen3-8B --port 8000",  # an unknown image's arguments
        "docker run --entrypoint= vllm/vllm-openai m",  # the image's CMD, not known here
        "docker run -p",  # a value missing: docker refuses
        "docker ps",
        "docker run --rm",  # no image
    ],
)
def test_not_a_known_start(words: str) -> None:
    assert container_start(words.split()) is None


@pytest.mark.parametrize(
    "words",
    [
        "docker run -d vllm:openvino vllm serve m --port 80",
        "docker run --rm my/build python3 -m vllm.entrypoints.openai.api_server --model m",
    ],
)
def test_an_unknown_image_given_a_vllm_command_runs_it(words: str) -> None:
    """An image kvconfig does not know, given a command that starts vLLM (or a shell
    script): the container's program is that command, as on an image with no entry point
    or one that ends in exec "$@"; only bare arguments need the image's entry point."""
    container = container_start(words.split())
    assert container is not None and container.words[-2:] in (("--port", "80"), ("--model", "m"))


SCRIPT = """#!/bin/bash
export VLLM_LOGGING_LEVEL=DEBUG
IMAGE=vllm/vllm-openai:v0.31.0
docker run --gpus all --env "CUDA_VISIBLE_DEVICES=1" -e HF_TOKEN --ipc host \\
    $IMAGE Qwen/Qwen3-8B --port 8200 \\
    --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}'
"""


def test_a_script_that_runs_a_vllm_image(tmp_path: Path) -> None:
    path = tmp_path / "start.sh"
    path.write_text(SCRIPT)
    (engine,) = engines_in(path, str(path))
    assert engine.argv[:1] == ("Qwen/Qwen3-8B",)
    assert engine.image == "vllm/vllm-openai:v0.31.0"
    assert engine.vllm_version == "0.31.0"
    assert engine.entry == "image entry point"
    # the container's environment is its -e options, not the script's exports
    assert dict(engine.env) == {"CUDA_VISIBLE_DEVICES": "1"}
    assert engine.env_unknown == ("HF_TOKEN",)
    assert engine.role == "decode"
    assert reading_of(engine).connector == "NixlConnector"


def test_a_script_that_runs_another_image_starts_no_vllm(tmp_path: Path) -> None:
    path = tmp_path / "start.sh"
    path.write_text("#!/bin/bash\ndocker run --rm ubuntu:24.04 sleep 1\n")
    with pytest.raises(InputError, match="no vLLM server found"):
        engines_in(path, str(path))


def test_the_options_without_a_value_are_the_docker_clis() -> None:
    """The installed docker CLI's own help: an option listed without a value type takes
    none; kvconfig's table is the same set."""
    import re
    import shutil
    import subprocess

    from kvconfig.load import docker_cli

    docker = shutil.which("docker")
    if docker is None:
        pytest.skip("no docker CLI on this machine")
    text = subprocess.run(
        [docker, "run", "--help"], capture_output=True, text=True, timeout=30, check=False
    ).stdout
    flags = re.findall(r"^\s+(?:-(\w), )?(--[a-z0-9-]+)(?: ([a-z]\w*))?\s{2,}", text, re.M)
    assert len(flags) > 50
    assert {long for _, long, kind in flags if not kind} == set(docker_cli._BOOLEAN)
    assert {short for short, _, kind in flags if short and not kind} == set(
        docker_cli._SHORT_BOOLEAN
    )


TASK = """resources:
  accelerators: H100:2
setup: |
  pip install vllm==0.6.6
run: |
  docker run --gpus all -e VLLM_LOGGING_LEVEL=DEBUG -v "$HOME/.cache:/root/.cache" \\
    vllm/vllm-openai:v0.31.0 Qwen/Qwen3-8B \\
    --tensor-parallel-size $SKYPILOT_NUM_GPUS_PER_NODE
"""


def test_a_skypilot_run_script_that_runs_a_vllm_image(tmp_path: Path) -> None:
    """The run script is bash on the node: its docker run starts the image's vllm serve,
    with the image's release (not the setup's pin: the container has its own vLLM)."""
    path = tmp_path / "task.yaml"
    path.write_text(TASK)
    (engine,) = engines_in(path, str(path))
    assert engine.argv == ("Qwen/Qwen3-8B", "--tensor-parallel-size", "2")
    assert engine.image == "vllm/vllm-openai:v0.31.0"
    assert engine.vllm_version == "0.31.0"
    assert dict(engine.env) == {"VLLM_LOGGING_LEVEL": "DEBUG"}
    assert reading_of(engine).tensor == 2


# (the docker run words, the -e environment the script sees, the script's dialect)
_ENTRY_SCRIPTS = [
    (
        ["--entrypoint", "bash", "-e", "BS=32", "img", "-c",
         'B=${BS:-16}; exec vllm serve "$0" --block-size $B', "Qwen/Qwen3-8B"],
        {"BS": "32"},
        "bash",
    ),
    (
        ["-e", "KV_A=1", "--entrypoint=/bin/sh", "img", "-xc",
         'if [ -n "$KV_A" ]; then set -- "$@" --tp 2; fi; vllm serve m "$@"', "sh", "--x"],
        {"KV_A": "1"},
        "dash",
    ),
    (
        ["--entrypoint", "/usr/bin/dash", "img", "-c", "cd /; vllm serve m --n $#", "a", "b"],
        {},
        "dash",
    ),
]  # fmt: skip


@pytest.mark.parametrize("words,env,shell", _ENTRY_SCRIPTS)
def test_an_entry_point_shell_runs_its_script(
    words: list[str], env: dict[str, str], shell: str, bindir: Path
) -> None:
    """``--entrypoint bash IMAGE -c SCRIPT ARGS``: the vLLM command kvconfig reads is the
    one the real shell runs with the container's -e environment and those arguments."""
    started = container_start(["docker", "run", *words])
    assert started is not None and started.command is not None
    at = words.index("img")
    runs = real(shell, words[at + 2], env, bindir) if len(words) == at + 3 else []
    if len(words) > at + 3:  # $0 and the arguments after the script
        import subprocess

        out = subprocess.run(
            [shell, "-c", words[at + 2], *words[at + 3 :]],
            env={"PATH": f"{bindir}:/usr/bin:/bin", **env},
            capture_output=True,
            check=False,
        ).stdout.decode()
        runs = [
            (("vllm", *r.partition("\002")[0].split("\037")[:-1]), ())
            for r in out.split("\001")[1:]
        ]
    assert [argv for argv, _ in runs] == [started.words]
    assert started.env == dict(started.command.env)


ENTRY_SCRIPT = """#!/bin/bash
export BS=64
docker run --gpus all -e KV=1 -e HF_TOKEN --entrypoint /bin/bash vllm/vllm-openai:v0.31.0 \\
    -c 'vllm serve Qwen/Qwen3-8B --block-size ${BS:-16} --max-model-len "$LEN"' -e LEN
"""


def test_a_script_whose_container_runs_a_shell_script(tmp_path: Path) -> None:
    """The container's script sees only the -e variables (not the caller's export), and
    an -e NAME without a value is only known at run time."""
    path = tmp_path / "start.sh"
    path.write_text(ENTRY_SCRIPT.replace(" -e LEN\n", "\n").replace("-e KV=1", "-e KV=1 -e LEN"))
    (engine,) = engines_in(path, str(path))
    assert engine.argv[:3] == ("Qwen/Qwen3-8B", "--block-size", "16")
    assert engine.image == "vllm/vllm-openai:v0.31.0" and engine.vllm_version == "0.31.0"
    assert dict(engine.env) == {"KV": "1"}
    assert set(engine.env_unknown) == {"HF_TOKEN", "LEN"}
    assert any("only known at run time" in n.message for n in engine.notes)


def test_a_container_script_only_known_at_run_time(tmp_path: Path) -> None:
    path = tmp_path / "start.sh"
    path.write_text('#!/bin/sh\ndocker run --entrypoint sh vllm/vllm-openai -c "$CMD"\n')
    with pytest.raises(InputError, match="no vLLM server found"):
        engines_in(path, str(path))
