"""kvcached's controller configs, read as ``controller/launch.py`` reads them."""

from __future__ import annotations

import pytest

from kvconfig.errors import NoEngine
from kvconfig.load.engines import engines_in
from kvconfig.load.reading import reading_of

CONFIG = """
kvcached:
  kvcached_gpu_utilization: 0.95
  kvcached_sanity_check: false
instances:
  - name: a
    model: Qwen/Qwen3-8B
    engine: VLLM
    engine_env: ["VLLM_USE_V1=1", "X=a=b"]
    engine_args:
      - "--block-size 32"
      - ["--max-model-len", "4096"]
      - "--served-model-name 'q 8b'"
  - model: Qwen/Qwen3-0.6B
    engine: sglang
    engine_args: "--mem-fraction-static 0.5"
  - model: org/second
    engine: vllm
    engine_args: "-tp 2 --port=8001"
"""


def test_each_vllm_instance_is_an_api_server() -> None:
    """--model MODEL then the shlex-split engine_args; SGLang instances are no engine;
    the kvcached section upper-cased (Python's str of each value), then the instance's
    env entries split at their first '='."""
    engines = engines_in(CONFIG, "<config>")
    assert [e.name for e in engines] == ["instances[0] (a)", "instances[2] (second)"]
    first, second = engines
    assert first.argv == (
        "--model", "Qwen/Qwen3-8B", "--block-size", "32", "--max-model-len", "4096",
        "--served-model-name", "q 8b",
    )  # fmt: skip
    assert dict(first.env) == {
        "KVCACHED_GPU_UTILIZATION": "0.95", "KVCACHED_SANITY_CHECK": "False",
        "VLLM_USE_V1": "1", "X": "a=b",
    }  # fmt: skip
    assert (first.entry, first.parser) == ("api_server", "api_server")
    r = reading_of(second)
    assert (r.model, r.tensor, r.block_size) == ("org/second", 2, None)
    assert reading_of(first).block_size == 32


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('engine_env: ["VLLM_USE_V1=1", "X=a=b"]', "engine_env: VLLM_USE_V1=1", "must be a list"),
        ("engine: VLLM\n", "engine: VLLM\n    using_venv: true\n", "'venv_path' must be given"),
        ("'q 8b'", "'q 8b", "engine_args: No closing quotation"),
        ("model: org/second", "model: [org/second]", "model and engine must be strings"),
    ],
)
def test_the_controller_s_refusals(old: str, new: str, message: str) -> None:
    """What _parse_cfg refuses before it starts any instance."""
    assert old in CONFIG
    with pytest.raises(NoEngine, match=message):
        engines_in(CONFIG.replace(old, new, 1), "<config>")


def test_an_instance_the_launch_raises_on_stops_the_ones_after_it() -> None:
    """An unknown engine or an env entry without '=' raises at that instance's launch:
    the instances before it run, it and the ones after it do not."""
    bad_engine = CONFIG.replace("engine: sglang", "engine: trtllm")
    assert [e.name for e in engines_in(bad_engine, "<config>")] == ["instances[0] (a)"]
    bad_env = CONFIG.replace('"X=a=b"', '"NOEQUALS"')
    with pytest.raises(NoEngine, match="starts no vllm instance"):
        engines_in(bad_env, "<config>")
