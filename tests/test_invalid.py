"""Bad input: every case under ``tests/invalid/`` gives exit 2 and exactly its golden line.

A case is ``NAME.err`` (the one stderr line it must produce) with either ``NAME.args``
(the command line, shell-quoted, run from ``tests/invalid/``) or ``NAME.yaml`` (linted
as ``kvconfig lint --platform h200 NAME.yaml``). The golden lines are the contract of
docs/errors.md: file and line, key, what was expected, how to fix it.

Set ``KVCONFIG_WRITE_GOLDEN=1`` to write missing ``.err`` files from the current output
(then read every new line before committing it).
"""

from __future__ import annotations

import io
import json
import os
import shlex
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import kvconfig
from kvconfig.cli import main
from kvconfig.load import yamlfile as _yaml

HERE = Path(__file__).parent / "invalid"
ROOT = Path(__file__).parent.parent


def _argv(name: str) -> list[str]:
    args = HERE / f"{name}.args"
    if args.exists():
        return shlex.split(args.read_text(encoding="utf-8"))
    return ["lint", "--platform", "h200", f"{name}.yaml"]


def _cases() -> list[str]:
    names = {p.stem for p in HERE.glob("*.args")} | {p.stem for p in HERE.glob("*.yaml")}
    return sorted(names)


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    out = io.StringIO()
    code = main(argv, stdout=out)
    captured = capsys.readouterr()
    return code, out.getvalue() + captured.out, captured.err


CASES = _cases()


def test_every_case_has_its_line_and_every_line_its_case() -> None:
    missing = [n for n in CASES if not (HERE / f"{n}.err").exists()]
    if not os.environ.get("KVCONFIG_WRITE_GOLDEN"):
        assert not missing, f"cases without a golden .err file: {missing}"
    orphans = sorted(p.stem for p in HERE.glob("*.err") if p.stem not in CASES)
    assert not orphans, f".err files no case produces: {orphans}"


@pytest.mark.parametrize("name", CASES)
def test_bad_input_gives_its_one_line(
    name: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(HERE)
    argv = _argv(name)
    code, out, err = _run(argv, capsys)
    golden = HERE / f"{name}.err"
    if not golden.exists() and os.environ.get("KVCONFIG_WRITE_GOLDEN"):
        golden.write_text(err, encoding="utf-8")
    assert code == 2, (code, out, err)
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert err == golden.read_text(encoding="utf-8")
    assert "Traceback" not in err
    # a bad input prints no report: a report with holes in it is worse than none
    assert out == "", out


@pytest.mark.parametrize(
    "name", ["yaml-alias-bomb", "speculative-config-bad-json", "env-v2-true", "native-count-huge"]
)
def test_a_real_process_prints_the_same_line_and_no_traceback(name: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("KVCONFIG_TRACEBACK", None)
    proc = subprocess.run(
        [sys.executable, "-m", "kvconfig", *_argv(name)],
        cwd=HERE,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr == (HERE / f"{name}.err").read_text(encoding="utf-8")
    assert "Traceback" not in proc.stderr


def test_one_bad_file_among_many_hides_none_of_the_others(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every file is read; each bad one gets its line on stderr and an error row in its
    # place in the report; the others keep their verdicts; the exit code is the worst.
    monkeypatch.chdir(HERE)
    good = "../../examples/qwen3-8b-eagle3-gh200-triton-64.yaml"
    rejected = "../../examples/qwen3-8b-eagle3-gh200-triton-128.yaml"
    files = [good, "block-size-zero.yaml", rejected, "empty.yaml"]
    code, out, err = _run(["lint", "--platform", "h200", *files], capsys)
    assert code == 2
    assert err == (HERE / "block-size-zero.err").read_text(encoding="utf-8") + (
        HERE / "empty.err"
    ).read_text(encoding="utf-8")
    rows = [line.split()[:2] for line in out.splitlines() if not line.startswith(" ")]
    assert rows[:-1] == [
        ["ok", good],
        ["error", "block-size-zero.yaml:2"],
        ["reject", rejected],
        ["error", "empty.yaml:1"],
    ]
    assert out.splitlines()[-1] == "1 of 4 safe, 2 not readable"
    code, out, _ = _run(["lint", "--format", "json", "--platform", "h200", *files], capsys)
    assert code == 2
    assert [d["verdict"] for d in json.loads(out)] == ["ok", "error", "reject", "error"]


def test_when_no_file_is_readable_the_error_lines_are_the_report(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(HERE)
    code, out, err = _run(
        ["lint", "--platform", "h200", "block-size-zero.yaml", "empty.yaml"], capsys
    )
    assert (code, out) == (2, "")
    assert err.count("\n") == 2


def test_json_gives_a_bad_file_as_an_error_object_in_its_place(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(HERE)
    good = "../../examples/qwen3-8b-eagle3-gh200-triton-64.yaml"
    code, out, err = _run(
        ["lint", "--platform", "h200", "--format", "json", good, "yaml-duplicate-key.yaml"],
        capsys,
    )
    assert code == 2
    assert err == (HERE / "yaml-duplicate-key.err").read_text(encoding="utf-8")
    docs = json.loads(out)
    assert [d["verdict"] for d in docs] == ["ok", "error"]
    assert docs[1]["source"] == "yaml-duplicate-key.yaml"
    assert err.startswith(f"kvconfig: {docs[1]['file']}:{docs[1]['line']}: ")


def test_an_error_shared_by_every_platform_is_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(HERE)
    code, out, err = _run(["lint", "--platform", "h200,b200", "empty.yaml"], capsys)
    assert (code, out) == (2, "")
    assert err == (HERE / "empty.err").read_text(encoding="utf-8")


def test_a_folder_lints_the_yaml_files_inside(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "deploy"
    (folder / "nested").mkdir(parents=True)
    examples = ROOT / "examples"
    (folder / "a.yaml").write_text(f"model: {examples / 'models/qwen3-8b'}\nblock-size: 16\n")
    (folder / "nested" / "b.yml").write_text("model: [\n")
    (folder / "notes.txt").write_text("not a deployment\n")
    monkeypatch.chdir(tmp_path)
    allow = ["--allow-path", str(examples)]  # the model lies outside this folder
    code, out, err = _run(["lint", "--platform", "h200", "deploy", *allow], capsys)
    assert code == 2
    assert err.startswith("kvconfig: deploy/nested/b.yml:2: invalid YAML: ")
    rows = [line.split()[:2] for line in out.splitlines() if not line.startswith(" ")]
    assert rows == [["ok", "deploy/a.yaml"], ["error", "deploy/nested/b.yml:2"], ["1", "of"]]
    (folder / "nested" / "b.yml").unlink()
    code, out, err = _run(["lint", "--platform", "h200", "deploy", *allow], capsys)
    assert (code, err) == (0, "")
    assert out.splitlines()[0].split()[:2] == ["ok", "deploy/a.yaml"]


def test_a_folder_walk_passes_over_files_without_a_vllm_engine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A repository's other YAML files (a CI workflow, a Service) and scripts are no error
    when a folder is linted; named on the command line, each is still bad input."""
    folder = tmp_path / "deploy"
    (folder / ".github" / "workflows").mkdir(parents=True)
    model = ROOT / "examples" / "models" / "qwen3-8b"
    (folder / "a.yaml").write_text(f"model: {model}\nblock-size: 16\n")
    (folder / "start.sh").write_text(f"#!/bin/bash\nexec vllm serve {model} --block-size 16\n")
    (folder / "build.sh").write_text("#!/bin/bash\nmake wheel\n")
    (folder / ".github" / "workflows" / "ci.yml").write_text("on: [push]\njobs: {a: {}}\n")
    (folder / "svc.yaml").write_text("apiVersion: v1\nkind: Service\nmetadata: {name: s}\n")
    (folder / "empty.yaml").write_text("")
    monkeypatch.chdir(tmp_path)
    allow = ["--allow-path", str(model)]
    code, out, err = _run(["lint", "--platform", "h200", "deploy", *allow], capsys)
    assert code == 0, err
    rows = [line.split()[:2] for line in out.splitlines() if not line.startswith(" ")]
    assert rows == [["ok", "deploy/a.yaml"], ["ok", "deploy/start.sh:2"], ["2", "of"]]
    assert err == (
        "kvconfig: note: 4 file(s) in the folders hold no vLLM engine, passed over: "
        "deploy/.github/workflows/ci.yml, deploy/build.sh, deploy/empty.yaml and 1 more\n"
    )
    for name in ("svc.yaml", "build.sh", ".github/workflows/ci.yml"):
        code, out, err = _run(["lint", "--platform", "h200", f"deploy/{name}"], capsys)
        assert (code, out) == (2, ""), name
        assert err.startswith(f"kvconfig: deploy/{name}"), err
    # a file whose keys are vLLM options is a serve config: its errors are not passed over
    (folder / "b.yaml").write_text("block-size: 16\n")
    code, out, err = _run(["lint", "--platform", "h200", "deploy", *allow], capsys)
    assert code == 2 and "deploy/b.yaml: model: no model given" in err
    (folder / "b.yaml").unlink()
    found = kvconfig.load_engines([str(folder)], allow_path=[str(model)])
    assert [Path(i.source).name for i in found] == ["a.yaml", "start.sh"]
    for name in ("a.yaml", "start.sh"):
        (folder / name).unlink()
    code, out, err = _run(["lint", "--platform", "h200", "deploy"], capsys)
    assert (code, out) == (2, "")
    assert err.splitlines()[-1] == (
        "kvconfig: deploy: no file in the folder holds a vLLM engine (pass the folder of the "
        "deployment files, or name a file to see why)"
    )


def test_an_oversized_file_is_refused_before_parsing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    big = tmp_path / "big.yaml"
    big.write_text("model: x\n" + "# padding\n" * (_yaml.MAX_BYTES // 10 + 1))
    size = big.stat().st_size
    monkeypatch.chdir(tmp_path)
    code, out, err = _run(["plan", "--platform", "h200", "big.yaml"], capsys)
    assert (code, out) == (2, "")
    assert err == (
        f"kvconfig: big.yaml: is {size} bytes; kvconfig reads at most {_yaml.MAX_BYTES} bytes "
        "(a file like this is a few KiB: check that this is the right path)\n"
    )


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs POSIX FIFOs")
@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_pipe_or_device_is_refused_without_reading_it(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # reading either would block or never end; kvconfig must refuse them by their type
    if kind == "fifo":
        path = tmp_path / "serve.yaml"
        os.mkfifo(path)
        target = "serve.yaml"
    else:
        target = "/dev/zero"
        if not stat.S_ISCHR(os.stat(target).st_mode):
            pytest.skip("no /dev/zero")
    monkeypatch.chdir(tmp_path)
    code, out, err = _run(["lint", "--platform", "h200", target], capsys)
    assert (code, out) == (2, "")
    assert err == (
        f"kvconfig: {target}: is a pipe, socket or device, not a regular file "
        "(pass a file saved on disk)\n"
    )


def test_an_unreadable_file_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "serve.yaml"
    path.write_text("model: x\n")
    path.chmod(0)
    if os.name != "posix" or os.geteuid() == 0:
        # root (CI) reads any file: the operating system's refusal is simulated where the
        # file is opened, as an unprivileged user gets it
        real_open = Path.open

        def refused(self: Path, *args: Any, **kwargs: Any) -> Any:
            if self.resolve() == path.resolve():
                raise PermissionError(13, "Permission denied", str(self))
            return real_open(self, *args, **kwargs)

        monkeypatch.setattr(Path, "open", refused)
    monkeypatch.chdir(tmp_path)
    code, out, err = _run(["plan", "--platform", "h200", "serve.yaml"], capsys)
    assert (code, out) == (2, "")
    assert err == "kvconfig: serve.yaml: cannot read: Permission denied (check its permissions)\n"


def test_an_internal_error_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """kvconfig's own failure keeps the contract (0, 1, 2): exit 2, one line that says it
    is kvconfig's failure and asks to report it, no traceback."""
    from kvconfig.cli import commands as cli

    def broken(*_: object) -> tuple[str, int]:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setitem(cli._HANDLERS, "plan", broken)
    monkeypatch.delenv("KVCONFIG_TRACEBACK", raising=False)
    code, out, err = _run(["plan", "--platform", "h200", "x.yaml"], capsys)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(
        "kvconfig: internal error (kvconfig's own failure, not your input's): "
        "ZeroDivisionError: division by zero (please report it to kvconfig"
    )
    monkeypatch.setenv("KVCONFIG_TRACEBACK", "1")
    with pytest.raises(ZeroDivisionError):
        main(["plan", "--platform", "h200", "x.yaml"])


def test_a_line_break_in_a_name_cannot_split_the_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = _run(["plan", "--platform", "h200", "two\nlines.yaml"], capsys)
    assert code == 2
    assert err == "kvconfig: two\\nlines.yaml: no such file (check the path)\n"
