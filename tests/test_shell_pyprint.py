"""The Python programs launch scripts print JSON with, read by ``kvconfig.load.shell.pyprint``
without running them, held to what CPython prints when it runs them (and, through a
script, to bash and dash running that script)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kvconfig.load.shell.pyprint import printed
from kvconfig.load.shell.script import read_script
from kvconfig.load.shell.words import HOLE, hole_names
from tests.test_shell_differential import BOTH, bindir, check, real  # noqa: F401

_LMCACHE = """import json
import sys

port = int(sys.argv[1])
print(json.dumps({
    "kv_connector": "LMCacheMPConnector",
    "kv_role": "kv_both",
    "kv_connector_extra_config": {"lmcache.mp.host": "tcp://localhost", "lmcache.mp.port": port},
}))
"""
_ATTENTION = """import json
import os

print(json.dumps({
    "backend": "FLASH_ATTN",
    "sink": int(os.environ["SINK"]) * 2,
    "on": True, "off": None, "ratio": 0.5,
}, separators=(",", ":")))
"""
_MIXED = '''"""A docstring."""
from os import getenv
import json as j, sys

def owner():
    return f"slot-{getenv('SLOT')}"

NAME: str = getenv("NAME", "default")
a, b = sys.argv[1], sys.argv[2]
if __name__ == "__main__":
    print("tp", int(a) + 1, sep="=", end=";")
    print(f"{NAME}/{b}", j.dumps([1, 2.5, "x"], indent=2, sort_keys=True))
    print(j.dumps({"z": 1, "a": {"b": [True, False]}}, sort_keys=True, ensure_ascii=False))
    print(str(3) + "x", 7 // 2, -4 % 3, 2 * 3 - 1, 1 / 4, "é")
'''

_ITEMS = """import json
import sys

role, rpc_port = sys.argv[1:3]
extra = {"discard_partial_chunks": False, "lmcache_rpc_port": rpc_port}
if role == "kv_consumer":
    extra["skip_last_n_tokens"] = 1
config = {"kv_connector": "LMCacheConnectorV1", "kv_role": role, "kv_connector_extra_config": extra}
alias = config
alias["kv_rank"] = 0
sizes = [1, 2, 3]
sizes[-1] = {"n": 4}
sizes[0] = sizes[1]
print(json.dumps(config, separators=(",", ":")), json.dumps(sizes))
"""

PROGRAMS = [
    (_ITEMS, ["-", "kv_consumer", "6555"], {}),
    (_ITEMS, ["-", "kv_producer", "6556"], {}),
    (_LMCACHE, ["-", "15557"], {}),
    (_ATTENTION, ["-"], {"SINK": "32"}),
    (_MIXED, ["-", "3", "b c"], {}),
    (_MIXED, ["-", "7", ""], {"NAME": "n"}),
    ("print(int(1.5 * 1024 * 1024 * 1024))", ["-c"], {}),
    ("import os\nprint(os.environ.get('X', 'd'), os.getenv('Y'))", ["-c"], {"X": "x"}),
    (
        "import sys\nrole, port, size = sys.argv[1:4]\nprint(role, port, sys.argv[-2:],"
        " sys.argv[::2], sys.argv[5:], 'abcdef'[1:-1:2])",
        ["-", "kv_producer", "14579", "1e9"],
        {},
    ),
]


def cpython(program: str, argv: list[str], env: dict[str, str]) -> str:
    """What CPython prints running ``program`` as ``python3 -`` or ``python3 -c`` would."""
    words = [sys.executable, "-c", program] if argv[0] == "-c" else [sys.executable, "-"]
    proc = subprocess.run(
        [*words, *argv[1:]],
        input=program if argv[0] == "-" else None,
        env={"PATH": "/usr/bin:/bin", **env},
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return proc.stdout


def _env(given: dict[str, str | None]):  # type: ignore[no-untyped-def]
    def variable(name: str) -> tuple[bool, str | None]:
        return (name in given, given.get(name))

    return variable


@pytest.mark.parametrize(("program", "argv", "env"), PROGRAMS)
def test_known_programs_print_what_cpython_prints(
    program: str, argv: list[str], env: dict[str, str]
) -> None:
    assert printed(program, argv, _env(dict(env)), "python3 -") == cpython(program, argv, env)


def test_a_run_time_value_is_a_hole_cpython_fills() -> None:
    """An argument or variable only known at run time is a hole; put in its place what
    CPython was given, the text is what CPython prints (JSON quotes kept for a string)."""
    program = (
        "import json, os, sys\n"
        "print(json.dumps({'ip': os.environ['POD_IP'], 'port': int(sys.argv[1]), 'k': 1}))"
    )
    out = printed(program, ["-", None], _env({"POD_IP": None}), "python3 -")
    assert out is not None
    assert hole_names(out) == ["$POD_IP", "${sys.argv[1]}"]
    values = {"$POD_IP": "10.0.0.7", "${sys.argv[1]}": "8100"}
    filled = HOLE.sub(lambda m: values[hole_names(m.group(0))[0]], out)
    assert filled == cpython(program, ["-", "8100"], {"POD_IP": "10.0.0.7"})


def test_a_function_s_result_is_a_hole_and_the_rest_is_known() -> None:
    program = "import json\ndef f():\n    return 'x'\nprint(json.dumps({'a': f(), 'b': 2}))"
    out = printed(program, ["-"], _env({}), "python3 -")
    assert out is not None and hole_names(out) == ["$(python3 -)"]
    assert HOLE.sub('"x"', out) == cpython(program, ["-"], {})


@pytest.mark.parametrize(
    "program",
    [
        "for i in range(2):\n    print(i)",  # a loop
        "import numpy\nprint(1)",  # a module outside the standard library
        "import this",  # an import that prints
        "import sys\nprint(1, file=sys.stderr)",  # another stream
        "print(open('/etc/hostname').read())",  # a call of anything else
        "import os\nprint(os.environ['MISSING'])",  # KeyError: the program fails
        "import sys\nprint(sys.argv[5])",  # IndexError
        "def f():\n    print('side')\nprint(f())",  # a function that prints
        "print(2 ** 2000)",  # a power: not followed
        "def print(*a):\n    pass\nprint(1)",  # print is the program's own
        "from builtins import print\nprint(1)",  # the name bound otherwise
        "print(int('x'))",  # ValueError
        "a = [1]\na[3] = 2\nprint(a)",  # IndexError
        "a = (1, 2)\na[0] = 2\nprint(a)",  # TypeError: a tuple
        "import sys\nsys.argv[0] = 'x'\nprint(1)",  # sys.argv: not followed
        "import json\nd = {}\nd['d'] = d\nprint(json.dumps(d))",  # a cycle: ValueError
        "d = {}\nd[[1]] = 2\nprint(d)",  # an unhashable key: TypeError
        "print(",  # no Python
        "x = 1\n" * 20000,  # longer than MAX_PROGRAM
    ],
)
def test_what_is_not_followed_is_only_known_at_run_time(program: str) -> None:
    assert printed(program, ["-"], _env({}), "python3 -") is None


_SCRIPT = """PORT=${PORT:-15557}
KV="$(python3 - "$PORT" <<'PY'
import json
import sys

print(json.dumps({"kv_connector": "LMCacheMPConnector", "kv_role": "kv_both",
                  "kv_connector_extra_config": {"lmcache.mp.port": int(sys.argv[1])}}))
PY
)"
ATT=$(SINK="$S" python3 -c 'import json, os
print(json.dumps({"backend": "FLASH_ATTN", "n": int(os.environ["SINK"])}))')
vllm serve m --kv-transfer-config "$KV" --attention-config "$ATT"
"""


_FUNCTION = """make_kv() {
    local role=$1
    python3 - "$role" "$2" <<'PY'
import json
import sys

role, port = sys.argv[1:3]
extra = {"port": port}
if role == "kv_consumer":
    extra["skip"] = 1
print(json.dumps({"kv_connector": "LMCacheConnectorV1", "kv_role": role,
                  "kv_connector_extra_config": extra}))
PY
}
start() {
    local kv
    kv=$(make_kv "$1" "$2")
    vllm serve m --kv-transfer-config "$kv"
}
start kv_producer 7001
start kv_consumer 7002
"""


def test_a_function_s_python_output_is_what_the_shells_pass(bindir: Path) -> None:  # noqa: F811
    """``kv=$(f ARGS)`` where ``f`` runs a Python program (a here-document's): the words
    kvconfig reads are the ones bash and dash pass."""
    check(_FUNCTION, {}, bindir, BOTH)
    reading = read_script(_FUNCTION, {}, dialect="sh")
    assert [c.words[0] for c in reading.commands] == ["vllm", "vllm"]
    assert all(not c.unknown for c in reading.commands)


def test_a_script_s_python_output_is_what_the_shells_pass(bindir: Path) -> None:  # noqa: F811
    """bash and dash run the script (python3 on the PATH): the words kvconfig reads are
    the words they pass, for a known ``S`` and one only known at run time."""
    check(_SCRIPT.replace('"$S"', "7"), {}, bindir, BOTH)
    for shell in BOTH:
        dialect = "bash" if shell == "bash" else "sh"
        reading = read_script(_SCRIPT.replace('"$S"', "7"), {}, dialect=dialect)
        (cmd,) = reading.commands
        assert not cmd.unknown
        assert [argv for argv, _ in real(shell, _SCRIPT.replace('"$S"', "7"), {}, bindir)] == [
            cmd.words
        ]
        late = read_script(_SCRIPT, {"S": None}, dialect=dialect)
        (cmd,) = late.commands
        assert dict(cmd.unknown) == {6: "$SINK"}
        assert cmd.words[4] == (
            '{"kv_connector": "LMCacheMPConnector", "kv_role": "kv_both", '
            '"kv_connector_extra_config": {"lmcache.mp.port": 15557}}'
        )
        assert cmd.words[6] == '{"backend": "FLASH_ATTN", "n": $SINK}'
    check(_SCRIPT, {"S": None}, bindir, BOTH)


_DOUBLING = [
    "a = [1, 2]\n" + "a = [a, a]\n" * 64 + "print(a)",
    "s = 'xy'\n" + "s = s + s\n" * 64 + "print(s)",
    "s = 'xy'\n" + "s = f'{s}{s}'\n" * 64 + "print(s)",
    "import json\nd = {'k': 'v'}\n" + "d = {'a': d, 'b': d}\n" * 64 + "print(json.dumps(d))",
    "s = '" + "x" * 60000 + "'\n" + "print(s)\n" * 500,
    "a = [" + ", ".join(["1"] * 5000) + "]\n" + "b = [a]\n" * 2000 + "print(1)",
]


@pytest.mark.parametrize("program", _DOUBLING)
def test_a_value_that_doubles_at_each_statement_is_not_written_out(program: str) -> None:
    """A program whose values or output grow beyond a few hundred KiB (a value used twice
    in the next one, at each statement) is left to run time, not computed."""
    assert printed(program, ["-"], _env({}), "python3 -") is None


def test_an_expansion_that_ends_the_substitution_leaves_the_script_running(
    bindir: Path,  # noqa: F811
) -> None:
    """``$(Y="${Z:?}" python3 ...)`` with ``Z`` unset: the error ends the substitution's
    subshell, not the script, so the server after it still starts (bash and dash)."""
    script = 'X=$(Y="${Z:?no}" python3 -c \'print(1)\'); vllm serve m --x "$X"'
    check(script, {}, bindir, BOTH)
    for shell in BOTH:
        reading = read_script(script, {}, dialect="bash" if shell == "bash" else "sh")
        assert [c.words[:3] for c in reading.commands] == [("vllm", "serve", "m")]


def test_a_program_s_syntax_warnings_are_not_printed() -> None:
    """Python warns about ``'\\d'`` and ``1if`` while parsing; kvconfig's output is its
    own, so reading such a program raises no warning."""
    import warnings

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = printed("x = '\\d'\nprint(x)", ["-"], _env({}), "python3 -")
        other = printed("print(1if 1 else 2)", ["-"], _env({}), "python3 -")
    assert out == "\\d\n" and other is None and not seen
