"""The ``sh -c`` script segmenter: commands, quoting, expansion and what stays unknown."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from kvconfig.errors import InputError
from kvconfig.load.operator_engine import server_start
from kvconfig.load.shell.lexer import split_words
from kvconfig.load.shell.script import commands

# (script, env, positional args, the words of the command that starts vLLM)
CASES = {
    "plain": ("vllm serve m --block-size 16", {}, [], ["vllm", "serve", "m", "--block-size", "16"]),
    "exec and continuations": (
        "exec vllm serve m \\\n  --block-size 64 \\\n  --enforce-eager",
        {},
        [],
        ["vllm", "serve", "m", "--block-size", "64", "--enforce-eager"],
    ),
    "VAR=x prefix": ("VLLM_USE_V2_MODEL_RUNNER=0 vllm serve m", {}, [], ["vllm", "serve", "m"]),
    "export then &&": (
        "export MODEL=Qwen/Qwen3-8B && vllm serve $MODEL",
        {},
        [],
        ["vllm", "serve", "Qwen/Qwen3-8B"],
    ),
    "; chain, the server segment": (
        "pip install x; nvidia-smi; vllm serve m; echo done",
        {},
        [],
        ["vllm", "serve", "m"],
    ),
    "pipes and redirections": (
        "vllm serve m --port 8000 2>&1 | tee /tmp/vllm.log > /dev/null",
        {},
        [],
        ["vllm", "serve", "m", "--port", "8000"],
    ),
    "quotes": (
        """vllm serve "my model" --speculative-config '{"method": "ngram"}' --x "a 'b'" """,
        {},
        [],
        [
            "vllm",
            "serve",
            "my model",
            "--speculative-config",
            '{"method": "ngram"}',
            "--x",
            "a 'b'",
        ],
    ),
    "defaults": (
        "vllm serve ${MODEL:-m} --block-size ${BS-32} --max-model-len ${LEN:+$LEN}",
        {"LEN": "4096"},
        [],
        ["vllm", "serve", "m", "--block-size", "32", "--max-model-len", "4096"],
    ),
    "field splitting": (
        'ARGS="--block-size 16 --enforce-eager"; vllm serve m $ARGS "$ARGS"',
        {},
        [],
        [
            "vllm",
            "serve",
            "m",
            "--block-size",
            "16",
            "--enforce-eager",
            "--block-size 16 --enforce-eager",
        ],
    ),
    "positional $@": (
        'vllm serve m "$@"',
        {},
        ["sh", "--block-size", "8"],
        ["vllm", "serve", "m", "--block-size", "8"],
    ),
    "if branches and comments": (
        'if [ "$RANK" = 0 ]; then\n  # the head node\n  vllm serve m\nfi',
        {"RANK": "0"},
        [],
        ["vllm", "serve", "m"],
    ),
    "env wrapper": (
        "env A=1 B=2 python3 -m vllm.entrypoints.openai.api_server --model m",
        {},
        [],
        ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"],
    ),
    "eval": (
        """eval "exec vllm serve m ${EXTRA}" """,
        {"EXTRA": """--block-size 16 --x '{"a": 1}'"""},
        [],
        ["vllm", "serve", "m", "--block-size", "16", "--x", '{"a": 1}'],
    ),
    "here-document skipped": (
        "cat <<EOF > /tmp/c.yaml\nvllm serve not-this\nEOF\nvllm serve m",
        {},
        [],
        ["vllm", "serve", "m"],
    ),
    "$'...' quoting": ("vllm serve m --x $'a\\tb'", {}, [], ["vllm", "serve", "m", "--x", "a\tb"]),
    "uv run": (
        "uv run --with vllm vllm serve m",
        {},
        [],
        ["uv", "run", "--with", "vllm", "vllm", "serve", "m"],
    ),
}


@pytest.mark.parametrize("name", CASES, ids=CASES.keys())
def test_the_server_command(name: str) -> None:
    script, env, args, want = CASES[name]
    starts = [c for c in commands(script, env, args, dialect="bash") if server_start(c.words)]
    assert len(starts) == 1
    assert list(starts[0].words) == want


def test_assignments_and_exports_reach_the_environment() -> None:
    (cmd,) = [
        c
        for c in commands("export A=1; B=2; C=3 vllm serve m", {"HOME": "/root"})
        if server_start(c.words)
    ]
    assert cmd.env == {"HOME": "/root", "A": "1", "C": "3"}


def test_unknown_values_stay_as_written() -> None:
    (cmd,) = [
        c
        for c in commands(
            'vllm serve "$MODEL" --api-key $KEY --host $(hostname -i)', {"KEY": None, "MODEL": "m"}
        )
        if server_start(c.words)
    ]
    assert cmd.words == ("vllm", "serve", "m", "--api-key", "$KEY", "--host", "$(hostname -i)")
    assert cmd.unknown == ((4, "$KEY"), (6, "$(hostname -i)"))


def test_envfrom_makes_unset_variables_unknown() -> None:
    (cmd,) = commands("vllm serve $MODEL", {}, unknown_rest=True)
    assert cmd.unknown == ((2, "$MODEL"),)
    (cmd,) = commands("vllm serve m$MODEL", {})
    assert cmd.words == ("vllm", "serve", "m") and cmd.unknown == ()


def test_lines_count_from_the_script_start() -> None:
    cmds = commands("pip install x\n\nvllm serve m \\\n  --x 1\nnvidia-smi", {}, line=10)
    assert [c.line for c in cmds] == [10, 12, 14]


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ("vllm serve 'm", "unterminated quote: the ' opened on line 1 of the script never closes"),
        ('echo ok\nvllm serve "m', 'unterminated quote: the " opened on line 2 of the script'),
        ("vllm serve ${MODEL", "unterminated ${: opened on line 1 of the script, never closed"),
        ("vllm serve $(cat x", "unterminated $(: opened on line 1"),
        ("cat <<EOF\nno end", "the here-document 'EOF' never ends"),
    ],
)
def test_broken_scripts_are_one_line_errors(script: str, message: str) -> None:
    with pytest.raises(InputError) as err:
        commands(script, {}, source="d.yaml", line=7, key="Deployment/x/vllm")
    text = str(err.value)
    assert message in text and "\n" not in text
    assert text.startswith("d.yaml:")


def test_split_words_keeps_expansions_as_written() -> None:
    assert split_words('--a "b c" $X \'{"k": 1}\' ${Y:-z}') == [
        "--a",
        "b c",
        "$X",
        '{"k": 1}',
        "${Y:-z}",
    ]


# ----- the shell inside operator files ------------------------------------------------
_PROFILE_DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: qwen3}
spec:
  template:
    spec:
      nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.33.0
          env:
            - {name: PROFILE, value: throughput}
          command: ["tini", "--", "/bin/bash", "-o", "pipefail", "-xc"]
          args:
            - |
              if [ "$PROFILE" = throughput ]; then BS=128; else BS=64; fi
              exec numactl --cpunodebind=0 vllm serve Qwen/Qwen3-8B --block-size $BS
"""


def test_a_pod_script_branch_is_decided_from_the_pod_env(tmp_path: Path) -> None:
    from kvconfig.load.engines import engines_in

    path = tmp_path / "d.yaml"
    path.write_text(_PROFILE_DEPLOYMENT)
    (engine,) = engines_in(path, "d.yaml")
    assert engine.argv == ("Qwen/Qwen3-8B", "--block-size", "128")
    path.write_text(_PROFILE_DEPLOYMENT.replace("value: throughput", "value: latency"))
    (engine,) = engines_in(path, "d.yaml")
    assert engine.argv == ("Qwen/Qwen3-8B", "--block-size", "64")


def test_a_pod_script_branch_on_a_secret_is_only_known_at_run_time(tmp_path: Path) -> None:
    from kvconfig.cli import main

    path = tmp_path / "d.yaml"
    path.write_text(
        _PROFILE_DEPLOYMENT.replace(
            "{name: PROFILE, value: throughput}",
            "{name: PROFILE, valueFrom: {secretKeyRef: {name: s, key: p}}}",
        )
    )
    err, out = io.StringIO(), io.StringIO()
    with redirect_stderr(err), redirect_stdout(out):
        code = main(["lint", str(path)])
    assert code == 0  # cannot tell is no rejection: the verdict is unknown (KV403)
    assert "KV403 runtime-value" in out.getvalue().splitlines()[0]
    assert "$BS is only known at run time, and --block-size changes the plan" in out.getvalue()
    # the value the cluster gives the Secret's variable, given with --env: the one shell
    # reader decides the branch with it, as the shell does
    from kvconfig.load.engines import engines_in

    for profile, block in (("throughput", "128"), ("latency", "64")):
        (engine,) = engines_in(path, "d.yaml", env={"PROFILE": profile})
        assert engine.argv == ("Qwen/Qwen3-8B", "--block-size", block)


def test_engines_started_in_the_background_all_run(tmp_path: Path) -> None:
    from kvconfig.load.engines import engines_in

    path = tmp_path / "c.yaml"
    path.write_text(
        "services:\n  vllm:\n    image: vllm/vllm-openai:v0.33.0\n"
        '    entrypoint: ["/bin/sh", "-c"]\n    command:\n'
        '      - "for p in 8000 8001; do vllm serve Qwen/Qwen3-0.6B --port $$p & done; wait"\n'
    )
    found = engines_in(path, "c.yaml")
    assert [(e.name, e.argv) for e in found] == [
        ("compose/vllm#1", ("Qwen/Qwen3-0.6B", "--port", "8000")),
        ("compose/vllm#2", ("Qwen/Qwen3-0.6B", "--port", "8001")),
    ]


@pytest.mark.parametrize("shell", ["bash", "dash"])
def test_a_shebang_after_blank_lines_is_still_a_script(tmp_path: Path, shell: str) -> None:
    """The kernel honours ``#!`` only at the file's first byte; after a blank line the
    shell that starts the file runs it itself (ENOEXEC), so it still runs as a script,
    and kvconfig reads it as one (not as YAML)."""
    import shutil
    import subprocess

    from kvconfig.load.engines import engines_in
    from kvconfig.load.script_file import script_dialect

    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed")
    text = "\n  \n#!/bin/bash\nM=Qwen/Qwen3-0.6B\necho ran\nvllm serve $M --block-size 32 &\n"
    path = tmp_path / "launch.sh"
    path.write_text(text)
    path.chmod(0o755)
    ran = subprocess.run(
        [shell, "-c", f"PATH=/nonexistent; {path}"], capture_output=True, text=True, check=False
    )
    assert ran.stdout.splitlines()[0] == "ran"
    assert script_dialect(text) == "bash"
    assert script_dialect("x: 1\n#!/bin/bash\n") is None
    [engine] = engines_in(path, "launch.sh")
    assert engine.argv == ("Qwen/Qwen3-0.6B", "--block-size", "32")
    assert engine.line == 6


def test_kserve_evaluates_vllm_additional_args_as_its_preset_does(tmp_path: Path) -> None:
    """The presets run ``eval "exec vllm serve ... ${VLLM_ADDITIONAL_ARGS} $@"``: the value
    is expanded by bash, defaults and arithmetic included, before vLLM sees it."""
    from kvconfig.load.engines import engines_in

    example = Path(__file__).parent.parent / "examples/operators/kserve-llminferenceservice.yaml"
    text = example.read_text().replace(
        'value: "--block-size 64"\n',
        "value: \"--block-size ${BS:-32} --max-model-len $((4096 * 2)) --x 'a  b'\"\n",
    )
    path = tmp_path / "k.yaml"
    path.write_text(text)
    prefill = next(e for e in engines_in(path, "k.yaml") if "prefill" in e.name)
    assert prefill.argv[-7:] == (
        "--block-size", "32", "--max-model-len", "8192", "--x", "a  b", "--enforce-eager",
    )  # fmt: skip
    path.write_text(text.replace("${BS:-32}", "$(cat /etc/bs)"))
    prefill = next(e for e in engines_in(path, "k.yaml") if "prefill" in e.name)
    assert [n.message for n in prefill.notes if n.kind == "unknown-value"] == [
        f"$(cat /etc/bs) in argument {prefill.argv.index('$(cat /etc/bs)') + 1} of vLLM is "
        "only known at run time"
    ]


@pytest.mark.parametrize(
    "module", ["vllm.entrypoints.grpc_server", "vllm.entrypoints.launchers.grpc_server"]
)
def test_the_grpc_server_starts_an_engine(module: str) -> None:
    """vLLM's gRPC server takes the engine's arguments with ``--model`` as an option
    (``vllm/entrypoints/launchers/grpc_server.py``, ``main``)."""
    from kvconfig.load.engines import engines_in
    from kvconfig.load.reading import reading_of

    words = ["python3", "-m", module, "--model", "Qwen/Qwen3-8B", "--tensor-parallel-size", "2"]
    assert server_start(words) == ("grpc_server", "api_server", words[3:])
    manifest = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: g}\nspec:\n  containers:\n"
        f"  - name: vllm\n    image: vllm/vllm-openai:v0.33.0\n    command: {words}\n"
    )
    (engine,) = engines_in(manifest, "<pod>")
    r = reading_of(engine)
    assert (r.model, r.tensor) == ("Qwen/Qwen3-8B", 2)
    assert server_start(["python3", "-m", "vllm.entrypoints.grpc"]) is None


def test_lmcache_v0_serves_with_vllm_s_own_cli() -> None:
    """``lmcache_vllm serve`` runs vLLM's CLI main with LMCache injected
    (LMCache/lmcache-vllm ``lmcache_vllm/script.py``), and is the ENTRYPOINT of its
    ``lmcache/lmcache_vllm`` image (``docker/Dockerfile``): arguments alone are vllm serve's."""
    from kvconfig.load.engines import engines_in
    from kvconfig.load.reading import reading_of

    words = ["lmcache_vllm", "serve", "m/x", "--tensor-parallel-size", "2"]
    assert server_start(words) == ("vllm serve", "serve", words[2:])
    assert server_start(["lmcache_vllm", "other"]) is None
    image = "lmcache/lmcache_vllm:lmcache-0.1.4"
    compose = f"services:\n  l:\n    image: {image}\n    command: m/x -tp 2\n"
    (engine,) = engines_in(compose, "<compose>")
    r = reading_of(engine)
    assert (r.model, r.tensor) == ("m/x", 2)


def test_vllm_mindspore_runs_the_module_it_names() -> None:
    """``python -m vllm_mindspore.entrypoints MODULE ARGS`` runs MODULE as __main__ with
    vLLM-MindSpore imported first (mindspore-ai/vllm-mindspore
    ``vllm_mindspore/entrypoints/__main__.py``): the server of that module, on ARGS."""
    head = ["python3", "-m", "vllm_mindspore.entrypoints"]
    api = [*head, "vllm.entrypoints.openai.api_server", "--model", "m/x", "-tp", "2"]
    assert server_start(api) == ("api_server", "api_server", api[4:])
    cli = [*head, "vllm.entrypoints.cli.main", "serve", "m/x"]
    assert server_start(cli) == ("vllm serve", "serve", ["m/x"])
    assert server_start(head) is None
    assert server_start([*head, "vllm.entrypoints.cli.main", "bench"]) is None


@pytest.mark.parametrize(
    ("script", "env", "runs"),
    [
        # the pattern has no pattern character: a string comparison, decided
        ('if [[ "${P,,}" == "xpu" ]]; then A=Z; else A=C; fi; env "$A=1" vllm serve m',
         {"P": "XPU"}, [("vllm", "serve", "m")]),
        ("if [[ $P != cuda ]]; then vllm serve a; else vllm serve b; fi",
         {"P": "cuda"}, [("vllm", "serve", "b")]),
        # a glob pattern on known words: matched, decided
        ("if [[ $P == cu* ]]; then vllm serve a; else vllm serve b; fi",
         {"P": "cuda"}, [("vllm", "serve", "a")]),
        # nocasematch possibly on: only known at run time, both kept
        ("shopt -s nocasematch; if [[ $P == cuda ]]; then vllm serve a; else vllm serve b; fi",
         {"P": "CUDA"}, [("vllm", "serve", "a"), ("vllm", "serve", "b")]),
    ],
)  # fmt: skip
def test_double_bracket_match(
    script: str, env: dict[str, str], runs: list[tuple[str, ...]]
) -> None:
    """bash's ``[[ == ]]`` / ``[[ != ]]`` match a pattern, decided from known words; after
    ``shopt`` on ``nocasematch`` (case-insensitive matching) the test is run-time."""
    got = [c for c in commands(script, env, dialect="bash") if c.words[0] == "vllm"]
    assert [c.words for c in got] == runs
    decided = len(runs) == 1
    assert all(not c.when for c in got) == decided


def test_canhazgpu_runs_the_command_after_its_separator() -> None:
    """``chg run [OPTIONS] -- COMMAND`` (canhazgpu, as vLLM's own test scripts use it):
    the command after ``--`` runs with the GPUs it reserves (CUDA_VISIBLE_DEVICES, at run
    time); without ``--`` kvconfig does not tell the command apart."""
    from kvconfig.load.shell.script import read_script

    reading = read_script("chg run -g1 -- vllm serve m --block-size 32\nchg run vllm serve x\n")
    (first,) = reading.commands  # the second is no program kvconfig can name
    assert first.words == ("vllm", "serve", "m", "--block-size", "32")
    assert first.env.get("CUDA_VISIBLE_DEVICES", "") is None
