"""docker-compose's own rules: a string ``command`` split as compose-go splits it, and
``.env`` files read as compose-go's ``dotenv`` package reads them.

Sources: compose-spec/compose-go ``types/command.go`` (a string command goes through
``shellwords.Parse`` of mattn/go-shellwords v1.0.12, the version its go.mod requires:
``shellwords.go`` and its ``shellwords_test.go``), ``dotenv/parser.go``,
``dotenv/godotenv.go`` and the expectations of ``dotenv/godotenv_test.go``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kvconfig.errors import InputError
from kvconfig.load.compose import parse_env, split_command

# (string, words, the text compose drops)
SPLITS = {
    "plain": ("vllm serve m --port 8000", ["vllm", "serve", "m", "--port", "8000"], ""),
    "a pipe ends the command": (
        "vllm serve m --port 8000 2>&1 | tee /tmp/log",
        ["vllm", "serve", "m", "--port", "8000"],
        "2>&1 | tee /tmp/log",
    ),
    "; and && end it too": ("vllm serve m; echo x && y", ["vllm", "serve", "m"], "; echo x && y"),
    "# is no comment": ("vllm serve m # note", ["vllm", "serve", "m", "#", "note"], ""),
    "quoted JSON": (
        """vllm serve m --x '{"a": 1}' --y "{\\"b\\": 2}\"""",
        ["vllm", "serve", "m", "--x", '{"a": 1}', "--y", '{"b": 2}'],
        "",
    ),
    "empty quotes are words": ("""foo "" bar ''""", ["foo", "", "bar", ""], ""),
    "an escaped operator": ("foo \\& bar", ["foo", "&", "bar"], ""),
    "backslash escapes in double quotes": (
        """var "--bar=\\'baz\\'\"""",
        ["var", "--bar='baz'"],
        "",
    ),
    "backslash kept in single quotes": ("var --bar='\\'", ["var", "--bar=\\"], ""),
    "no expansion": ("a $X ${Y:-1} $(b c)", ["a", "$X", "${Y:-1}", "$(b c)"], ""),
    "quoted operators stay": ("sh -c 'a | b; c'", ["sh", "-c", "a | b; c"], ""),
}


@pytest.mark.parametrize("name", SPLITS, ids=SPLITS.keys())
def test_a_string_command_splits_as_compose_splits_it(name: str) -> None:
    text, words, dropped = SPLITS[name]
    assert split_command(text) == (words, dropped, False)


@pytest.mark.parametrize("text", ["foo '", 'foo "', "foo `", "foo (bar)", "foo \\"])
def test_strings_compose_refuses(text: str) -> None:
    assert split_command(text)[2] is True


# (env file, variables compose gives it from the shell, the variables it defines)
ENV_FILES = {
    "plain": (
        "A=1\nB=2\nC= 3\nD =4\nE = 5\nF = \nG=\nH = my string # a comment\n",
        {},
        {"A": "1", "B": "2", "C": "3", "D": "4", "E": "5", "F": "", "G": "", "H": "my string"},
    ),
    "a # without a space before it is text": ("A=a#b\n", {}, {"A": "a#b"}),
    "export and yaml style": ("export A=2\nB: 3\n", {}, {"A": "2", "B": "3"}),
    "quotes": (
        "A='1'\nB=''\nC='\\n'\nD=\"\\n\"\nE = \"echo 'x'\" # comment\nF='it\\'s'\n"
        "G='first\nsecond'\n",
        {},
        {
            "A": "1",
            "B": "",
            "C": "\\n",
            "D": "\n",
            "E": "echo 'x'",
            "F": "it's",
            "G": "first\nsecond",
        },
    ),
    "interpolation": (
        'A=1\nB=${A}\nC=$B\nD=${A}_${B}\nE=${UNSET}\nF="q $A"\nG=\'q $A\'\nH="x\\$A"\n',
        {},
        {"A": "1", "B": "1", "C": "1", "D": "1_1", "E": "", "F": "q 1", "G": "q $A", "H": "x$A"},
    ),
    "the shell environment wins in interpolation": (
        "A=1\nB=$A\n",
        {"A": "9"},
        {"A": "1", "B": "9"},
    ),
    "a bare key comes from the shell": ("A\nB=2\nC\n", {"A": "x"}, {"A": "x", "B": "2"}),
    "defaults": ("A=${X:-d}\nB=${X-e}\nC=${A:+alt}\n", {}, {"A": "d", "B": "e", "C": "alt"}),
    "dots and dashes in names": ("A.B=1\nC-D=2\n", {}, {"A.B": "1", "C-D": "2"}),
}


@pytest.mark.parametrize("name", ENV_FILES, ids=ENV_FILES.keys())
def test_env_files_read_as_compose_reads_them(name: str) -> None:
    text, shell, want = ENV_FILES[name]
    assert parse_env(text, ".env", shell) == want


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("A B=1\n", "a key cannot contain a space"),
        ("A*=1\n", "unexpected character '*'"),
        ("A='open\n", "unterminated quoted value 'open"),
        ("A=${B:?needs B}\n", "${B} is required: needs B"),
    ],
)
def test_bad_env_files_are_one_line_errors(text: str, message: str) -> None:
    with pytest.raises(InputError) as err:
        parse_env(text, ".env", {})
    assert message in str(err.value) and "\n" not in str(err.value)
    assert str(err.value).startswith(".env:1:")


_COMPOSE = """\
services:
  vllm:
    image: vllm/vllm-openai:v0.33.0
    command: --model Qwen/Qwen3-8B --block-size ${BS:?set BS} --max-model-len ${LEN} 2>&1 | tee log
"""


def test_a_service_whose_command_pipes_starts(tmp_path: Path) -> None:
    from kvconfig.load.engines import engines_in

    (tmp_path / "compose.yaml").write_text(_COMPOSE)
    (tmp_path / ".env").write_text('LEN="4096" # the context\n')
    with pytest.raises(InputError, match=r"\$\{BS\} is required: set BS .* --env BS=VALUE"):
        engines_in(tmp_path / "compose.yaml", "compose.yaml")
    (engine,) = engines_in(tmp_path / "compose.yaml", "compose.yaml", env={"BS": "16"})
    assert engine.argv == (
        "--model",
        "Qwen/Qwen3-8B",
        "--block-size",
        "16",
        "--max-model-len",
        "4096",
    )
    (note,) = [n for n in engine.notes if n.kind == "dropped-words"]
    assert "'2>&1 | tee log' never runs" in note.message


def test_the_command_line_env_is_the_shell_environment_compose_uses(tmp_path: Path) -> None:
    from kvconfig.cli import targets

    (tmp_path / "compose.yaml").write_text(_COMPOSE)
    (item,) = targets.read(str(tmp_path / "compose.yaml"), {"BS": "32", "LEN": "8"})
    assert item.engine is not None
    assert item.engine.argv[3:] == ("32", "--max-model-len", "8")


def test_the_dropped_text_is_a_finding(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kvconfig.cli import main

    model = Path(__file__).resolve().parent.parent / "examples" / "models" / "qwen3-8b"
    (tmp_path / "compose.yaml").write_text(
        "services:\n  vllm:\n    image: vllm/vllm-openai:v0.33.0\n"
        f"    command: --model {model} --block-size 16 2>&1 | tee /tmp/log\n"
    )
    code = main(["lint", "--platform", "h100", "--format", "json", str(tmp_path / "compose.yaml")])
    out = capsys.readouterr().out
    assert code == 0 and '"KV811"' in out and "2>&1 | tee /tmp/log" in out


def test_a_required_secret_in_the_environment_is_unknown(tmp_path: Path) -> None:
    """``HF_TOKEN: ${HF_TOKEN:?msg}`` in a service's environment: compose takes it from the
    shell it runs in, which kvconfig does not have, so the container's variable is unknown
    (a note says so) rather than the file bad input; ``--env`` gives it a value. A required
    variable in the command stays an error (``test_a_service_whose_command_pipes_starts``)."""
    from kvconfig.load.engines import engines_in

    (tmp_path / "compose.yaml").write_text(
        "services:\n  vllm:\n    image: vllm/vllm-openai:v0.33.0\n"
        "    environment:\n      HF_TOKEN: ${HF_TOKEN:?set HF_TOKEN}\n"
        "    command: [Qwen/Qwen3-8B]\n"
    )
    (engine,) = engines_in(tmp_path / "compose.yaml", "compose.yaml")
    assert "HF_TOKEN" in engine.env_unknown and "HF_TOKEN" not in engine.env
    (note,) = [n for n in engine.notes if n.kind == "required-variable"]
    assert "${HF_TOKEN} is required" in note.message
    (given,) = engines_in(tmp_path / "compose.yaml", "compose.yaml", env={"HF_TOKEN": "x"})
    assert given.env["HF_TOKEN"] == "x" and not given.env_unknown


def test_an_error_names_the_variables_compose_made_empty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--model $LLM_MODEL_ID`` with the variable set nowhere: compose makes it empty, the
    command loses the word and vLLM's parser refuses it; the one-line error says which
    variable, the command's own first, and how to give it."""
    from kvconfig.cli import main

    (tmp_path / "compose.yaml").write_text(
        "services:\n  vllm:\n    image: vllm/vllm-openai:v0.33.0\n"
        "    environment:\n      http_proxy: ${http_proxy}\n"
        "    command: --model $LLM_MODEL_ID --tensor-parallel-size ${NUM_CARDS} --port 80\n"
    )
    code = main(["lint", "--platform", "h100", str(tmp_path / "compose.yaml")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "--tensor-parallel-size: needs a value" in err
    assert "compose made $LLM_MODEL_ID, $NUM_CARDS, $http_proxy empty" in err
    assert "--env LLM_MODEL_ID=VALUE" in err
    model = Path(__file__).resolve().parent.parent / "examples" / "models" / "qwen3-8b"
    given = ["--env", f"LLM_MODEL_ID={model}", "--env", "NUM_CARDS=1", "--env", "http_proxy="]
    assert main(["lint", "--platform", "h100", *given, str(tmp_path / "compose.yaml")]) == 0
