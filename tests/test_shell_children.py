"""Scripts that start other scripts (``bash FILE ARGS``) and change folder (``cd``),
against real bash and dash (``test_shell_sources``'s harness: a git repository, the
script run by its full path from another folder, a stand-in ``vllm`` that records its
arguments; bash's process substitution is tested there); and a ``.sh`` file without
``#!``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kvconfig.errors import InputError
from kvconfig.load.engines import engines_in
from kvconfig.load.reading import reading_of
from kvconfig.load.shell.script import read_script
from tests.test_shell_sources import BOTH, check, repo, write

__all__ = ["repo"]

_LAUNCHER = """if [ $# -lt 1 ]; then echo "usage: $0 ROLE [MODEL]"; exit 1; fi
MODEL=${2:-Qwen/Qwen3-0.6B}
if [ "$1" = prefill ]; then
    vllm serve "$MODEL" --port 7100 --role-was "$1" --from "$(basename "$0")"
else
    vllm serve "$MODEL" --port 7200 --tensor-parallel-size 2
fi
"""


PREFILL_TAIL = ("--role-was", "prefill", "--from", "launcher.sh")


@pytest.mark.parametrize("shell", BOTH)
def test_child_script_runs_with_its_arguments(repo: Path, shell: str) -> None:
    """``cd "$(dirname "$0")"`` then ``SHELL launcher.sh ROLE MODEL &``: a new shell reads
    the file from the folder, with ``$0`` its name and ``$1 $2`` the arguments; its
    ``exit`` ends only the child (run without arguments it starts nothing)."""
    write(repo / "launch" / "launcher.sh", _LAUNCHER)
    script = write(
        repo / "launch" / "run.sh",
        f'#!/bin/{shell}\ncd "$(dirname "$0")"\n{shell} launcher.sh\n'
        f"{shell} launcher.sh decode M1 &\n{shell} ./launcher.sh prefill &\n"
        "vllm serve after --port 1\nwait\n",
    )
    reading = check(script, shell)
    assert not reading.blind
    got = [c.words for c in reading.commands if c.words[0] == "vllm"]
    assert got == [
        ("vllm", "serve", "M1", "--port", "7200", "--tensor-parallel-size", "2"),
        ("vllm", "serve", "Qwen/Qwen3-0.6B", "--port", "7100", *PREFILL_TAIL),
        ("vllm", "serve", "after", "--port", "1"),
    ]
    assert [c.background for c in reading.commands if c.words[0] == "vllm"] == [True, True, False]


@pytest.mark.parametrize("shell", BOTH)
def test_cd_relative_to_a_known_folder(repo: Path, shell: str) -> None:
    """A relative ``cd`` starts from the folder an earlier ``cd`` went to; the child
    script is found there, and a child shell (``bash FILE``, ``sh -c``) starts in it: its
    ``$PWD``, ``pwd`` and relative names (``. ./FILE``) are taken from there."""
    write(repo / "common" / "launcher.sh", _LAUNCHER)
    write(repo / "common" / "env.sh", "BS=32\n")
    write(repo / "common" / "child.sh", '. ./env.sh\nvllm serve "$PWD" "$(pwd)" "$BS"\n')
    script = write(
        repo / "launch" / "run.sh",
        f'#!/bin/{shell}\ncd "$(dirname "$0")"\ncd ../common\n'
        f'{shell} launcher.sh decode "$PWD" &\n{shell} child.sh\n'
        f"{shell} -c 'vllm serve \"$PWD\"'\nwait\n",
    )
    reading = check(script, shell)
    assert not reading.blind
    folder = str(repo / "common")
    assert [c.words for c in reading.commands if c.words[0] == "vllm"] == [
        ("vllm", "serve", folder, "--port", "7200", "--tensor-parallel-size", "2"),
        ("vllm", "serve", folder, folder, "32"),
        ("vllm", "serve", folder),
    ]


@pytest.mark.parametrize("shell", BOTH)
def test_child_script_from_an_unknown_folder(repo: Path, shell: str) -> None:
    """Without a ``cd`` the folder is the caller's: the relative file is not read, and
    the reading says so (it may start anything)."""
    write(repo / "launch" / "launcher.sh", _LAUNCHER)
    script = write(repo / "launch" / "run.sh", f"#!/bin/{shell}\n{shell} launcher.sh decode &\n")
    reading = check(script, shell)
    assert reading.blind == (
        f"the script launcher.sh run by {shell} (taken from the folder it runs in, "
        "only known at run time)",
    )
    assert not [c for c in reading.commands if c.words[0] == "vllm"]


def test_script_without_shebang(tmp_path: Path) -> None:
    """A ``.sh`` file without ``#!`` is a script bash runs (bash's manual, "Shell
    Scripts"), not YAML; the same text in a ``.yaml`` file is not a script."""
    text = "export A=1\nvllm serve Qwen/Qwen3-8B --tensor-parallel-size 2 --data-parallel-size 2\n"
    (tmp_path / "serve.sh").write_text(text)
    (engine,) = engines_in(tmp_path / "serve.sh", "serve.sh")
    r = reading_of(engine)
    assert (r.model, r.tensor, r.data) == ("Qwen/Qwen3-8B", 2, 2)
    (tmp_path / "serve.yaml").write_text(text)
    with pytest.raises(InputError, match=r"serve\.yaml"):
        engines_in(tmp_path / "serve.yaml", "serve.yaml")


@pytest.mark.parametrize(
    ("script", "want"),
    [
        # docker exec: options, then the container, then the command's words as given
        (
            'docker exec -d -e KV=1 --workdir /w box /bin/bash -c "vllm serve m --port 1"',
            [(("vllm", "serve", "m", "--port", "1"), True, {"KV": "1"}, ())],
        ),
        (
            "docker container exec -it box vllm serve 'a b' \"$Q\"",
            [(("vllm", "serve", "a b", "$Q"), False, {}, ((3, "$Q"),))],
        ),
        # ssh: the words joined, read by the remote login shell; -f: not waited for
        (
            'C="vllm serve m -tp $Q"; ssh -tt -p 22 host "$C --port 2" &',
            [(("vllm", "serve", "m", "-tp", "$Q", "--port", "2"), True, {}, ((4, "$Q"),))],
        ),
        ("ssh -f host vllm serve n '\"x y\"'", [(("vllm", "serve", "n", "x y"), True, {}, ())]),
        ("ssh -N -L 1:h:2 host; docker exec box", []),
    ],
)
def test_commands_run_in_a_container_or_on_another_host(
    script: str, want: list[tuple[tuple[str, ...], bool, dict[str, str], tuple[Any, ...]]]
) -> None:
    """The container's or remote login's environment is not the script's: only ``-e``
    settings are known there, and nothing the script set reaches it."""
    reading = read_script("X=local; export X\n" + script, {"Q": None}, dialect="bash")
    vllm = [c for c in reading.commands if c.words[0] == "vllm"]
    assert [(c.words, c.background, dict(c.env), c.unknown) for c in vllm] == want


_WRITE = "cat > /tmp/run.sh <<'EOF'\nvllm serve m --block-size 32\nEOF\n"


@pytest.mark.parametrize(
    ("script", "want", "blind"),
    [
        # scp copies the file to the host at that path, where ssh's shell runs it
        (_WRITE + "scp -q /tmp/run.sh gpu1:/tmp/run.sh\nssh gpu1 'nohup bash /tmp/run.sh' &",
         [(("vllm", "serve", "m", "--block-size", "32"), True)], ""),
        (_WRITE + "scp /tmp/run.sh me@gpu1:/tmp/r.sh; ssh -p 22 me@gpu1 sh /tmp/r.sh",
         [(("vllm", "serve", "m", "--block-size", "32"), False)], ""),
        # not copied there, or copied to another host: the remote file is not the script's
        (_WRITE + "ssh gpu1 bash /tmp/run.sh", [], "/tmp/run.sh run by bash"),
        (_WRITE + "scp /tmp/run.sh gpu2:/tmp/run.sh; ssh gpu1 bash /tmp/run.sh", [],
         "/tmp/run.sh run by bash"),
        # a relative remote path is in the remote user's home: not known here
        (_WRITE + "scp /tmp/run.sh gpu1:run.sh; ssh gpu1 bash /tmp/run.sh", [], "run by bash"),
        # a running container holds none of the script's files
        (_WRITE + "docker exec box bash /tmp/run.sh", [], "/tmp/run.sh run by bash"),
        # files written on the host under a run-time name, copied and run under that name
        ('D="$HOME/out"; cat > "$D/l.sh" <<EOF\nvllm serve $M\nEOF\n'
         'scp "$D/l.sh" "h:$D/l.sh"; ssh h "bash \'$D/l.sh\'"',
         [(("vllm", "serve", "q"), False)], ""),
    ],
)  # fmt: skip
def test_files_the_script_writes_live_on_one_machine(
    script: str, want: list[tuple[tuple[str, ...], bool]], blind: str
) -> None:
    """A file the script writes (``kvconfig.load.shell.writes``) is on the machine it was
    written on; ``scp`` copies it to another host and ``ssh HOST`` runs it there."""
    reading = read_script(script, {"HOME": None, "M": "q"}, dialect="bash")
    vllm = [(c.words, c.background) for c in reading.commands if c.words[0] == "vllm"]
    assert vllm == want
    assert any(blind in b for b in reading.blind) if blind else not reading.blind


def test_a_launch_script_runs_in_a_login_session(tmp_path: Path) -> None:
    """A script read from a file here runs in a user's session: ``$HOME`` is set (to a
    value only known there), so ``set -u`` does not end the script at it; a container's
    ``sh -c`` gets only its image's environment."""
    text = '#!/bin/bash\nset -u\nCACHE="$HOME/.cache"\nvllm serve m --download-dir "$CACHE"\n'
    (tmp_path / "serve.sh").write_text(text)
    reading = read_script(text, {}, path=str(tmp_path / "serve.sh"), dialect="bash")
    assert [(c.words, c.unknown) for c in reading.commands] == [
        (("vllm", "serve", "m", "--download-dir", "$HOME/.cache"), ((4, "$HOME"),))
    ]
    assert read_script(text, {}, dialect="bash").commands == ()


@pytest.mark.parametrize("shell", BOTH)
def test_a_script_of_the_repository_run_by_its_path(repo: Path, shell: str) -> None:
    """``"$DIR/serve.sh" ARGS``: the kernel runs an executable file by its ``#!`` line (a
    script without one, the calling shell reads: ENOEXEC); one its owner may not run is
    refused (status 126). kvconfig reads the first two as the shells do, and leaves the
    third a program."""
    write(repo / "launch" / "serve.sh", '#!/bin/sh\nvllm serve "$1" --port "${2:-1}"\n')
    write(repo / "launch" / "bare.sh", 'vllm serve bare "$0"\n')
    write(repo / "launch" / "locked.sh", "#!/bin/sh\nvllm serve locked\n")
    (repo / "launch" / "serve.sh").chmod(0o755)
    (repo / "launch" / "bare.sh").chmod(0o700)
    script = write(
        repo / "launch" / "run.sh",
        f'#!/bin/{shell}\nDIR="$(cd "$(dirname "$0")" && pwd)"\n'
        '"$DIR/serve.sh" m1 7 &\n"$DIR/bare.sh"\n"$DIR/locked.sh" || vllm serve after\n',
    )
    reading = check(script, shell)
    named = [c.words for c in reading.commands if c.words[0] == "vllm"]
    assert named[0] == ("vllm", "serve", "m1", "--port", "7")
    assert named[1] == ("vllm", "serve", "bare", str(repo / "launch" / "bare.sh"))
    assert ("vllm", "serve", "locked") not in named
