"""A JSON option holding a part only known at run time (``"port": $PORT``, unquoted: the
text is no JSON until the shell fills it): what it holds whatever that part is, read with
two stand-ins (kvconfig.load.jsontext)."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

from kvconfig.cli import main
from kvconfig.load import jsontext
from kvconfig.load.reading import reading_of
from kvconfig.load.script_file import engines

QWEN3_8B = Path(__file__).parent.parent / "examples" / "models" / "qwen3-8b"


def test_what_two_stand_ins_agree_on() -> None:
    text = '{"kv_connector": "X", "kv_role": "kv_both", "extra": {"port": $PORT, "a": [1, "b"]}}'
    pair = jsontext.with_stand_ins(text)
    assert pair is not None
    assert jsontext.agreed(*pair) == {
        "kv_connector": "X", "kv_role": "kv_both", "extra": {"a": [1, "b"]}
    }  # fmt: skip
    assert jsontext.agreed(*jsontext.with_stand_ins('{"kv_role": "kv_$R"}') or (0, 1)) == {}
    assert jsontext.with_stand_ins('{"a": $(cmd) $X}') is None  # no JSON either way


def test_a_run_time_port_leaves_the_connector_and_the_plan_known(tmp_path: Path) -> None:
    """After ``source`` of a file kvconfig does not have, ``$PORT`` is only known at run
    time; it sits in ``kv_connector_extra_config``, which no rule reads for LMCache's
    connector: the connector and role are read, and the plan is made (not KV403)."""
    script = (
        "#!/bin/bash\nsource ./env.sh\n"
        "vllm serve Qwen/Qwen3-8B --block-size 32 --kv-transfer-config "
        '\'{"kv_connector":"LMCacheMPConnector","kv_role":"kv_both",'
        '"kv_connector_extra_config":{"lmcache.mp.port":\'$PORT\'}}\'\n'
    )
    path = tmp_path / "serve.sh"
    path.write_text(script)
    (engine,) = engines(script, str(path), tmp_path, None, path)
    reading = reading_of(engine)
    assert (reading.connector, reading.kv_role) == ("LMCacheMPConnector", "kv_both")
    out, err = io.StringIO(), io.StringIO()
    argv = ["lint", "--platform", "H100", "--model-path", f"Qwen/Qwen3-8B={QWEN3_8B}", str(path)]
    with contextlib.redirect_stderr(err):
        code = main(argv, out)
    assert code == 0 and "KV403" not in out.getvalue() + err.getvalue(), out.getvalue()
    assert "LMCacheMPConnector" in out.getvalue()
