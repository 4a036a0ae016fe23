"""A launch script's own path and the files it sources, against real bash and dash.

Each script is a file in a git repository under a temporary folder, run by its full path
(``bash /.../launch/run.sh``: ``$0`` is that path) from another folder, with a ``vllm``
program first on PATH that prints its arguments (``test_shell_differential._VLLM``).
kvconfig reads the same file (``read_script(path=...)``) under the repository's roots.
As in ``test_shell_differential``, kvconfig may say "only known at run time", never be
wrong: every command it is sure of ran, and when it saw everything, exactly its
commands ran.
"""

from __future__ import annotations

import builtins
import pathlib
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from kvconfig.load.roots import allowed_roots, reading_within
from kvconfig.load.shell import paths
from kvconfig.load.shell.script import Reading, read_script
from kvconfig.load.shell.state import MAX_EVAL_DEPTH
from tests.test_shell_differential import _VLLM, _matches

BOTH = ("bash", "dash")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "launch").mkdir()
    (root / "common").mkdir()
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "vllm").write_text(_VLLM)
    (bindir / "vllm").chmod(0o755)
    (tmp_path / "elsewhere").mkdir()
    return root


def run(shell: str, script: Path) -> list[tuple[str, ...]]:
    """The vLLM commands ``shell SCRIPT`` runs, started from a folder outside the repo."""
    tmp = script.parents[2] if script.parent.name == "launch" else script.parents[1]
    proc = subprocess.run(
        [shell, str(script)],
        env={"PATH": f"{tmp / 'bin'}:/usr/bin:/bin", "HOME": "/home/kv"},
        cwd=tmp / "elsewhere",
        capture_output=True,
        timeout=20,
        check=False,
    )
    out = proc.stdout.decode("utf-8", "surrogateescape")
    runs = []
    for record in out.split("\001")[1:]:
        argv_text = record.partition("\002")[0]
        runs.append(("vllm", *argv_text.split("\037")[:-1]))
    return runs


def read(script: Path, shell: str) -> Reading:
    with reading_within(allowed_roots([str(script)])):
        return read_script(
            script.read_text(),
            {"HOME": "/home/kv"},
            dialect="bash" if shell == "bash" else "sh",
            path=str(script),
        )


def check(script: Path, shell: str) -> Reading:
    """kvconfig's reading of ``script`` agrees with ``shell`` running it."""
    reading = read(script, shell)
    vllm = [c for c in reading.commands if c.words[0] == "vllm"]
    sure = Counter(c.words for c in vllm if not c.unknown and not c.when)
    ran = Counter(run(shell, script))
    where = f"{shell} {script.name}"
    assert not sure - ran, f"{where}: kvconfig says {list(sure - ran)} runs; ran {list(ran)}"
    if not reading.blind:
        for argv in ran:
            assert any(_matches(c, argv) for c in vllm), f"{where}: {argv} ran, not named"
        if sum(sure.values()) == len(vllm):
            assert ran == sure, f"{where}: ran {list(ran)}, kvconfig says {list(sure)}"
    return reading


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _dot(shell: str) -> str:
    return "source" if shell == "bash" else "."


@pytest.mark.parametrize("shell", BOTH)
def test_sourced_helper_sets_variables_and_functions(repo: Path, shell: str) -> None:
    write(
        repo / "common" / "utils.sh",
        'MODEL="Qwen/Qwen3-0.6B"\nBS=16\n'
        'serve() { vllm serve "$MODEL" --block-size "$1" --port "$2" & }\n',
    )
    script = write(
        repo / "launch" / "run.sh",
        f'#!/bin/{shell}\nMODEL=unset-before\nSCRIPT_DIR="$(dirname "$(readlink -f "$0")")"\n'
        f'{_dot(shell)} "$SCRIPT_DIR/../common/utils.sh"\n'
        'serve $BS 1\nvllm serve "$MODEL" --port 2 &\nwait\n',
    )
    reading = check(script, shell)
    assert not reading.blind
    assert [c.words for c in reading.commands] == [
        ("vllm", "serve", "Qwen/Qwen3-0.6B", "--block-size", "16", "--port", "1"),
        ("vllm", "serve", "Qwen/Qwen3-0.6B", "--port", "2"),
    ]
    with reading_within(allowed_roots([str(script)])):
        dialect = "bash" if shell == "bash" else "sh"
        again = read_script(script.read_text(), path=str(script), line=1, dialect=dialect)
    lines = [c.line for c in again.commands]
    assert lines == [None, 6]  # the helper's line is not one of the script's


@pytest.mark.parametrize("shell", BOTH)
def test_dollar_zero_and_the_path_programs(repo: Path, shell: str) -> None:
    (repo / "common" / "folder").mkdir()
    (repo / "launch" / "in").symlink_to(repo / "common")
    target = write(
        repo / "launch" / "run.sh",
        f"#!/bin/{shell}\n"
        'vllm serve "$0" "$(basename "$0")" "$(basename "$0" .sh)" "$(dirname "$0")" \\\n'
        '  "$(dirname "$(dirname "$0")")" "$(readlink -f "$0")" "$(realpath "$0")" \\\n'
        '  "$(readlink -f "$(dirname "$0")/in/folder/")" "$(readlink -e "$(dirname "$0")/in")" \\\n'
        '  "$(readlink -f "$(dirname "$0")/in/new")" $(dirname a/b//) $(basename /) \\\n'
        '  $(dirname x) "$(basename -a x/y z/)" "$(dirname -- //a)" \\\n'
        '  "$(basename -s .sh a.sh b)" \\\n'
        '  "$(dirname "$0" 2>/dev/null)" `basename "$0"` \\\n'
        '  "$(readlink "$0")" "$(readlink "$(dirname "$0")/in")" "$(readlink "$0/")"\n',
    )
    link = repo / "launch" / "link.sh"
    link.symlink_to(target)
    for script in (target, link):
        reading = check(script, shell)
        [cmd] = reading.commands
        assert not cmd.unknown and not reading.blind, (cmd.unknown, reading.blind)
        assert cmd.words[7] == cmd.words[8] == str(target)  # readlink -f follows the link
        # readlink without -f: a link's target as written, nothing for another file
        assert cmd.words[-3:] == ("" if script == target else str(target), str(repo / "common"), "")


@pytest.mark.parametrize("shell", BOTH)
def test_cd_to_the_scripts_folder(repo: Path, shell: str) -> None:
    """``cd "$(dirname "$0")"`` goes to a folder of the repository: from there ``$PWD``,
    ``pwd``, ``$OLDPWD``, a relative ``source`` and ``readlink -f`` are known; a folder
    outside the repository is a run-time choice (it may not be there)."""
    (repo / "models").mkdir()
    (repo / "launch" / "in").symlink_to(repo / "common")
    write(repo / "common" / "env.sh", "BS=32\n")
    script = write(
        repo / "launch" / "run.sh",
        f"#!/bin/{shell}\n"
        'cd "$(dirname "$0")" || exit 1\n'
        f"{_dot(shell)} ./in/env.sh\n"
        'vllm serve "$(pwd)/../models" --block-size "$BS" "$(readlink -f in)" "$(cd .. && pwd)"\n'
        'cd ../models; vllm serve "$PWD" "$OLDPWD" "$(cd ../launch/in && pwd -P)"\n'
        'cd -P ../launch/in; vllm serve "$PWD" "$(pwd)" "$(cd ..; pwd)"\n'
        '(cd / && vllm serve "$PWD"); cd /nonexistent; vllm serve "$PWD"\n',
    )
    reading = check(script, shell)
    assert not reading.blind
    first, second, third, fourth, last = reading.commands
    assert first.words[2:] == (
        f"{repo}/launch/../models",
        "--block-size",
        "32",
        f"{repo}/common",
        str(repo),
    )
    assert second.words[2:] == (f"{repo}/models", f"{repo}/launch", f"{repo}/common")
    assert third.words[2:] == (f"{repo}/common",) * 2 + (str(repo),)
    assert not (first.unknown or second.unknown or third.unknown)
    assert fourth.words[2] == "/" and fourth.when  # cd / may fail: it is not read here
    assert last.unknown == ((2, "$PWD"),)


@pytest.mark.parametrize("shell", BOTH)
def test_what_stays_unknown(repo: Path, shell: str) -> None:
    script = write(
        repo / "launch" / "run.sh",
        f"#!/bin/{shell}\n"
        'dirname() { echo mine; }\nvllm serve "$(dirname "$0")"\n'
        'vllm serve "$(readlink -f relative)" "$(readlink -f /etc/passwd)" "$(readlink /etc/x)"\n'
        'vllm serve "$(basename "$0" > /dev/null)" "$(realpath --relative-to=/ "$0")"\n',
    )
    reading = check(script, shell)
    # a function of the script shadows the program: its output is what it echoes
    assert reading.commands[0].words[2:] == ("mine",)
    assert [len(c.unknown) for c in reading.commands] == [0, 3, 2]


@pytest.mark.parametrize("shell", BOTH)
def test_container_script_zero_is_its_name(shell: str) -> None:
    """``sh -c SCRIPT NAME``: ``$0`` is NAME, a word; the container's files are not read."""
    script = 'vllm serve "$0" "$(basename "$0")" "$(readlink -f "$0")"'
    dialect = "bash" if shell == "bash" else "sh"
    reading = read_script(script, {}, ["/app/start.sh"], dialect=dialect)
    [cmd] = reading.commands
    assert cmd.words[:4] == ("vllm", "serve", "/app/start.sh", "start.sh")
    assert [i for i, _ in cmd.unknown] == [4]
    real = subprocess.run(
        [shell, "-c", 'echo "$0"', "/app/start.sh"], capture_output=True, text=True, check=True
    )
    assert real.stdout.strip() == cmd.words[2]


@pytest.mark.parametrize("shell", BOTH)
def test_sourced_file_outside_the_repository_is_not_read(
    repo: Path, shell: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = write(repo.parent / "elsewhere" / "secret.sh", "MODEL=from-outside\n")
    script = write(
        repo / "launch" / "run.sh",
        f'#!/bin/{shell}\nMODEL=m\n{_dot(shell)} {outside}\nvllm serve "$MODEL"\n',
    )
    opened: list[str] = []
    real_open, path_open = builtins.open, pathlib.Path.open

    def spy(file: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(file))
        return real_open(file, *args, **kwargs)

    def path_spy(self: Path, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(self))
        return path_open(self, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", spy)
    monkeypatch.setattr(pathlib.Path, "open", path_spy)
    reading = read(script, shell)
    monkeypatch.undo()
    assert str(outside) not in opened
    assert any("outside the repository" in b for b in reading.blind)
    [cmd] = reading.commands
    assert cmd.unknown and cmd.when  # MODEL may be anything; the file may exit
    check(script, shell)


@pytest.mark.parametrize("shell", BOTH)
def test_missing_or_unresolved_sourced_files_stay_opaque(repo: Path, shell: str) -> None:
    write(repo / "launch" / "here.sh", "MODEL=relative\n")
    cases = {
        "missing": ('"$(dirname "$(readlink -f "$0")")/missing.sh"', "no such file here"),
        "relative": ("./here.sh", "taken from the current folder, only known at run time"),
        "path search": ("here.sh", "searched on $PATH"),
        "run-time name": ('"$(pwd)/here.sh"', "its name is only known at run time"),
    }
    for name, (target, why) in cases.items():
        script = write(
            repo / "launch" / "run.sh",
            f'#!/bin/{shell}\nMODEL=m\n{_dot(shell)} {target}\nvllm serve "$MODEL" x\n',
        )
        reading = check(script, shell)
        assert any(why in b for b in reading.blind), (name, reading.blind)
        [cmd] = reading.commands
        assert cmd.when, name  # dash stops at a file it cannot open; any file may exit


@pytest.mark.parametrize("shell", BOTH)
def test_exit_and_return_in_a_sourced_file(repo: Path, shell: str) -> None:
    write(repo / "common" / "ret.sh", 'X=1\nif [ -z "$Y" ]; then return; fi\nX=2\n')
    write(repo / "common" / "exit.sh", "vllm serve from-helper &\nexit 0\n")
    for helper, tail in (("ret.sh", 'vllm serve "$X"\n'), ("exit.sh", "vllm serve never\n")):
        script = write(
            repo / "launch" / "run.sh",
            f'#!/bin/{shell}\n{_dot(shell)} "$(dirname "$(readlink -f "$0")")/../common/'
            f'{helper}"\n{tail}wait\n',
        )
        reading = check(script, shell)
        assert not reading.blind
        assert [c.words for c in reading.commands] == [
            ("vllm", "serve", "1") if helper == "ret.sh" else ("vllm", "serve", "from-helper")
        ]


@pytest.mark.parametrize("shell", BOTH)
def test_nesting(repo: Path, shell: str) -> None:
    dot = _dot(shell)
    here = '"$(dirname "$(readlink -f "$0")")/../common'
    write(
        repo / "common" / "again.sh",
        f'N=$((N + 1)); if [ "$N" -lt 3 ]; then {dot} {here}/again.sh"; fi\n',
    )
    deep = MAX_EVAL_DEPTH + 2
    for k in range(deep):
        nxt = f'{dot} {here}/level{k + 1}.sh"\n' if k + 1 < deep else "MODEL=deepest\n"
        write(repo / "common" / f"level{k}.sh", nxt)
    script = write(
        repo / "launch" / "run.sh",
        f'#!/bin/{shell}\nN=0\n{dot} {here}/again.sh"\nvllm serve "$N"\n'
        f'MODEL=m\n{dot} {here}/level0.sh"\nvllm serve "$MODEL"\n',
    )
    reading = check(script, shell)
    first, second = reading.commands
    assert first.words == ("vllm", "serve", "3") and not first.unknown
    assert second.unknown and any("nested deeper" in b for b in reading.blind)


@pytest.mark.parametrize(
    "name",
    ["", "/", "//", "///", "a", "a/", "/a", "/a/", "//a", "a/b", "a//b//", ".", "..", "../x",
     "/usr//lib/", "a/b/c.sh", ".sh"],
)  # fmt: skip
def test_dirname_basename_as_coreutils(name: str) -> None:
    def coreutils(*argv: str) -> str:
        return subprocess.run(argv, capture_output=True, text=True, check=True).stdout[:-1]

    assert paths.dirname(name) == coreutils("dirname", "--", name)
    assert paths.basename(name) == coreutils("basename", "--", name)
    assert paths.basename(name, ".sh") == coreutils("basename", "--", name, ".sh")


@pytest.mark.parametrize(
    "argv",
    [["basename", "-as", ".sh", "a.sh", "b"], ["basename", "-s.sh", "x/a.sh"],
     ["basename", "--suffix", ".sh", "a.sh"], ["basename", "--suffix=.sh", "a.sh", "c/"],
     ["basename", "-a", "--", "-x", "y/"], ["basename", "a.sh", ".sh"], ["dirname", "a/b", "c"],
     ["basename", "x", "-a", "y"], ["basename", "x", "-a"], ["dirname", "-z", "x/y"]],
)  # fmt: skip
def test_path_program_options_as_coreutils(argv: list[str]) -> None:
    real = subprocess.run(argv, capture_output=True, text=True, check=False)
    want = real.stdout.rstrip("\n") if real.returncode == 0 else None
    got = paths.output(argv, files=False)
    assert got == want or (got is None and "-z" in argv)  # -z (NUL-ended) is not computed


def test_bash_source_and_cd_pwd(repo: Path) -> None:
    """bash's ``BASH_SOURCE``: the script, a sourced file as named, a function's file;
    ``$(cd DIR && pwd)`` the folder as text, ``-P`` with links followed."""
    (repo / "launch" / "up").symlink_to(repo / "common")
    write(
        repo / "common" / "u.sh",
        'vllm serve "${BASH_SOURCE[0]}" "${BASH_SOURCE[1]}" &\n'
        'where() { vllm serve "$(basename "${BASH_SOURCE[0]}")" "$1" & }\n',
    )
    script = write(
        repo / "launch" / "run.sh",
        "#!/bin/bash\n"
        'HERE="$( cd "$( dirname "${BASH_SOURCE[0]}" )" && pwd )"\n'
        'source "$HERE/up/../launch/../common/u.sh"\n'
        'mine() { vllm serve "${BASH_SOURCE[0]}" & }\nmine; where x\n'
        'vllm serve "$(cd "$HERE/up" && pwd)" "$(cd -P "$HERE/up" && pwd)" '
        '"$(cd "$HERE/up/.." && pwd -P)" "$(cd "$HERE/nope" && pwd)" &\nwait\n',
    )
    reading = check(script, "bash")
    assert not reading.blind
    words = [c.words for c in reading.commands]
    assert words[0][3] == words[1][2] == str(script) and words[2][2:] == ("u.sh", "x")
    assert words[3][2:5] == (f"{repo}/launch/up", f"{repo}/common", f"{repo}/launch")
    assert [i for i, _ in reading.commands[3].unknown] == [5]  # cd to a missing folder


def test_what_bash_sets_is_only_known_at_run_time() -> None:
    script = 'if [ "${BASH_VERSINFO[0]}" -lt 4 ]; then exit 1; fi; vllm serve "$BASH_VERSION" $X'
    [bash] = read_script(script, {}, dialect="bash").commands
    assert bash.when and [i for i, _ in bash.unknown] == [2]  # the test may exit
    [dash] = read_script(script.replace("${BASH_VERSINFO[0]}", "5"), {}).commands
    assert not dash.when and dash.words == ("vllm", "serve", "")  # dash sets no BASH_VERSION


def test_nested_substitutions_are_bounded() -> None:
    """``$(dirname $(dirname ...))`` is computed up to the nesting limit, then unknown."""
    for n, known in ((MAX_EVAL_DEPTH, True), (MAX_EVAL_DEPTH + 1, False), (2000, False)):
        word = "a/" * n + "x"
        for _ in range(n):
            word = f"$(dirname {word})"
        [cmd] = read_script(f"vllm serve {word}").commands
        assert (cmd.words[2] == "a") == known and bool(cmd.unknown) != known


@pytest.mark.parametrize("shell", BOTH)
def test_a_script_run_by_bash_from_its_folder(repo: Path, shell: str) -> None:
    """``cd`` to the script's folder, then ``bash FILE ARGS``: a child that sees the
    exported variables only and its own arguments (vLLM's LMCache P/D example runs its
    launcher so, one role per call, in the background)."""
    write(
        repo / "launch" / "role.sh",
        '#!/bin/bash\nif [ $# -lt 1 ]; then exit 1; fi\nHERE="$(cd "$(dirname "$0")" && pwd)"\n'
        'vllm serve m --role "$1" "${2:-none}" "${SEEN-unset}" "${KEPT-unset}" '
        '"$(basename "$HERE")"\n'
        "KEPT=changed\n",
    )
    script = write(
        repo / "launch" / "run.sh",
        '#!/bin/sh\ncd "$(dirname "$0")"\nSEEN=1; export KEPT=2\n'
        "bash role.sh prefill &\nbash -e role.sh decode x\nsh ./role.sh\n"
        'vllm serve after "$KEPT"\ncd /\nbash role.sh elsewhere\nwait\n',
    )
    reading = check(script, shell)
    words = [c.words for c in reading.commands if c.words[0] == "vllm"]
    assert words == [
        ("vllm", "serve", "m", "--role", "prefill", "none", "unset", "2", "launch"),
        ("vllm", "serve", "m", "--role", "decode", "x", "unset", "2", "launch"),
        ("vllm", "serve", "after", "2"),
    ]
    assert reading.commands[0].background


def test_process_substitution_is_a_path_the_command_writes_to(repo: Path) -> None:
    """bash's ``>(...)`` and ``<(...)``: a /dev/fd path (a run-time word), the command
    inside runs beside; as a redirection target it is no argument (``> >(tee LOG) 2>&1
    &``: the server runs, in the background)."""
    script = write(
        repo / "launch" / "run.sh",
        "#!/bin/bash\nvllm serve m > >(tee a.log) 2>&1 &\n"
        "while read -r x; do :; done < <(echo 1)\nvllm serve n <(echo 2) >(cat)\nwait\n",
    )
    reading = check(script, "bash")
    served = [c for c in reading.commands if c.words[0] == "vllm"]
    assert served[0].words == ("vllm", "serve", "m") and served[0].background
    assert (served[1].words, served[1].unknown) == (
        ("vllm", "serve", "n", "<(echo 2)", ">(cat)"),
        ((3, "<(echo 2)"), (4, ">(cat)")),
    )


@pytest.mark.parametrize("shell", BOTH)
def test_a_container_runs_a_script_of_a_bind_mounted_folder(repo: Path, shell: str) -> None:
    """``docker run -v "$DIR:/opt/app:ro" IMAGE bash /opt/app/serve.sh ARG`` on an image
    whose entry point runs its command as given (Dynamo's runtime images): the container's
    bash reads serve.sh from the mounted folder, with the ``-e`` variables and nothing of
    the script's own; without the mount the file is the container's, not read here."""
    write(repo / "launch" / "serve.sh", 'vllm serve "$1" --block-size "${BS:-16}" "$HOST_ONLY"\n')
    image = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.4.2"
    script = write(
        repo / "launch" / "run.sh",
        f"#!/bin/{shell}\nexport HOST_ONLY=h\n"
        'DIR=$(cd "$(dirname "$0")" && pwd)\n'
        f'docker run --rm -e BS=32 -v "$DIR:/opt/app:ro" {image} bash /opt/app/serve.sh m1 &\n'
        f"docker run --rm {image} bash /opt/app/serve.sh m2\n"
        f'docker run --rm -v "$DIR:/opt/app" {image} sh -c "vllm serve m3" \n',
    )
    reading = read(script, shell)
    first, third = (c for c in reading.commands if c.words[0] == "vllm")
    assert first.words[:5] == ("vllm", "serve", "m1", "--block-size", "32")
    assert [i for i, _ in first.unknown] == [5]  # the image's env may set HOST_ONLY
    assert first.background
    assert third.words == ("vllm", "serve", "m3") and not third.background
    assert any("/opt/app/serve.sh" in b and "not read here" in b for b in reading.blind)
