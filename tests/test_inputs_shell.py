"""The ``sh -c`` script segmenter: commands, quoting, expansion and what stays unknown."""

from __future__ import annotations

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
        {},
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
    starts = [c for c in commands(script, env, args) if server_start(c.words)]
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
    cmds = commands("set -e\n\nvllm serve m \\\n  --x 1\necho", {}, line=10)
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
