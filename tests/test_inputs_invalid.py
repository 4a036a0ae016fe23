"""Bad operator files: each case under ``tests/invalid/inputs/`` gives exactly its line.

A case is ``NAME.yaml`` with ``NAME.err``, the line ``kvconfig lint`` prints for it
(``kvconfig: `` and the ``InputError``): file and line, resource and container, what
was expected, how to fix it. Set ``KVCONFIG_WRITE_GOLDEN=1`` to write missing ``.err``
files from the current output (then read every new line before committing it).
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from kvconfig.errors import InputError
from kvconfig.load import documents, engines

HERE = Path(__file__).parent / "invalid" / "inputs"
CASES = sorted(p.stem for p in HERE.glob("*.yaml"))


def _line(path: Path, source: str) -> str:
    with pytest.raises(InputError) as err:
        engines.engines_in(path, source)
    return f"kvconfig: {err.value}\n"


def test_there_are_cases_for_every_format() -> None:
    prefixes = {name.split("-", 1)[0] for name in CASES}
    assert prefixes >= {
        "k8s",
        "kserve",
        "dynamo",
        "production",
        "llm",
        "compose",
        "skypilot",
        "rayserve",
    }


@pytest.mark.parametrize("name", CASES)
def test_bad_input_gives_its_one_line(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(HERE)
    line = _line(Path(f"{name}.yaml"), f"{name}.yaml")
    golden = HERE / f"{name}.err"
    if not golden.exists() and os.environ.get("KVCONFIG_WRITE_GOLDEN"):
        golden.write_text(line, encoding="utf-8")
    assert line.count("\n") == 1
    assert line == golden.read_text(encoding="utf-8")


def test_an_oversized_manifest_is_refused_before_parsing(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    doc = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: '"
        + "x" * 4000
        + "'}\n---\n"
    )
    with big.open("w", encoding="utf-8") as f:
        for _ in range(50 * 1024 * 1024 // len(doc) + 1):
            f.write(doc)
    size = big.stat().st_size
    assert size > 50 * 1024 * 1024
    line = _line(big, "big.yaml")
    assert line == (
        f"kvconfig: big.yaml: is {size} bytes; kvconfig reads at most "
        f"{documents.MAX_MANIFEST_BYTES} bytes (a file like this is a few KiB: check that this "
        "is the right path)\n"
    )


def test_standard_input_is_bounded_too() -> None:
    stream = io.BytesIO(b"#" * (documents.MAX_MANIFEST_BYTES + 1))
    with pytest.raises(InputError) as err:
        documents.read_stream(stream)
    assert str(err.value) == (
        f"<stdin>: is over {documents.MAX_MANIFEST_BYTES} bytes; kvconfig reads at most "
        f"{documents.MAX_MANIFEST_BYTES} bytes (pass fewer resources, e.g. helm template "
        "--show-only templates/FILE)"
    )


def test_standard_input_reads_a_manifest() -> None:
    text = documents.read_stream(
        io.BytesIO(
            b"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
            b"    - name: vllm\n      image: vllm/vllm-openai:v0.33.0\n      args: [m]\n"
        )
    )
    (engine,) = engines.engines_in(text, "<stdin>")
    assert (engine.name, engine.source, engine.line, engine.argv) == (
        "Pod/p/vllm", "<stdin>", 6, ("m",)
    )  # fmt: skip


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs POSIX FIFOs")
def test_a_pipe_is_refused_without_reading_it(tmp_path: Path) -> None:
    fifo = tmp_path / "m.yaml"
    os.mkfifo(fifo)
    assert _line(fifo, "m.yaml") == (
        "kvconfig: m.yaml: is a pipe, socket or device, not a regular file (pass a file saved "
        "on disk)\n"
    )


def test_an_empty_stream_says_so() -> None:
    with pytest.raises(InputError, match="the input is empty"):
        engines.engines_in("# nothing\n---\n", "<stdin>")
