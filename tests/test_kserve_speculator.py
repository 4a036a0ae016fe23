"""KServe ``LLMInferenceService`` ``spec.speculator``: the ``--speculative-config`` its
controller appends to the decode workload's ``VLLM_ADDITIONAL_ARGS``
(kserve/kserve pkg/controller/v1alpha2/llmisvc/workload_speculator.go)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from kvconfig.cli import main
from kvconfig.errors import InputError
from kvconfig.load.engines import engines_in
from kvconfig.load.kserve_speculator import (
    SPECULATOR_DIR,
    go_json,
    infer_json_type,
    strip_speculative_config,
)
from kvconfig.load.reading import reading_of
from kvconfig.schemas.plan import Plan

MODELS = Path(__file__).parent.parent / "examples" / "models"

SERVICE = """\
apiVersion: serving.kserve.io/v1alpha2
kind: LLMInferenceService
metadata:
  name: spec
spec:
  model:
    uri: hf://Qwen/Qwen3-8B
    name: Qwen/Qwen3-8B
  speculator:
{speculator}
  template:
    containers:
      - name: main
{env}
{prefill}
"""

EAGLE = """\
    model:
      uri: hf://AngelSlim/Qwen3-8B_eagle3
    config:
      method: eagle3
      num_speculative_tokens: "3"
"""

PREFILL = """\
  prefill:
    template:
      containers:
        - name: main
"""


def _service(speculator: str = EAGLE, env: str = "", prefill: str = "") -> str:
    return SERVICE.format(speculator=speculator.rstrip("\n"), env=env, prefill=prefill)


def _spec_config(engine: Any) -> dict[str, Any] | None:
    argv = list(engine.argv)
    if "--speculative-config" not in argv:
        return None
    config: dict[str, Any] = json.loads(argv[argv.index("--speculative-config") + 1])
    return config


@pytest.mark.parametrize(
    ("value", "want"),
    [
        ("4", 4),
        ("-2", -2),
        ("0.5", 0.5),
        ("1e3", 1000.0),
        ("9223372036854775808", 9223372036854775808.0),  # past int64: a float
        ("true", True),
        ("t", True),  # Go's strconv.ParseBool spelling
        ("False", False),
        ("1", 1),  # an int before a bool
        ("nan", "nan"),  # not finite: kept as written
        ("eagle3", "eagle3"),
    ],
)
def test_config_values_are_typed_as_kserve_types_them(value: str, want: Any) -> None:
    got = infer_json_type(value)
    assert got == want and type(got) is type(want)


def test_the_json_is_written_as_gos_encoding_json_writes_it() -> None:
    text = go_json({"b": 2.0, "a": 1e20, "c": 1e-7, "d": "<x>", "e": True})
    assert text == ('{"a":100000000000000000000,"b":2,"c":1e-7,"d":"\\u003cx\\u003e","e":true}')
    assert json.loads(text)["d"] == "<x>"


def test_an_earlier_speculative_config_is_stripped() -> None:
    value = '--max-model-len 4096 --speculative-config \'{"method": "ngram"}\'  --enforce-eager'
    assert strip_speculative_config(value) == "--max-model-len 4096 --enforce-eager"
    assert strip_speculative_config("--enforce-eager") == "--enforce-eager"


def test_the_decode_workload_gets_the_speculator_and_prefill_does_not() -> None:
    engines = engines_in(_service(prefill=PREFILL), "svc.yaml")
    by_role = {reading_of(e).role: e for e in engines}
    assert set(by_role) == {"decode", "prefill"}
    assert _spec_config(by_role["prefill"]) is None
    assert _spec_config(by_role["decode"]) == {
        "method": "eagle3",
        "model": SPECULATOR_DIR,
        "num_speculative_tokens": 3,
    }
    assert by_role["decode"].speculator_uri == "hf://AngelSlim/Qwen3-8B_eagle3"
    assert reading_of(by_role["decode"]).speculative == "eagle3"


def test_without_a_model_there_is_no_model_key() -> None:
    ngram = '    config:\n      method: ngram\n      prompt_lookup_max: "4"\n'
    (engine,) = engines_in(_service(ngram), "svc.yaml")
    assert _spec_config(engine) == {"method": "ngram", "prompt_lookup_max": 4}
    assert engine.speculator_uri is None


def test_it_is_appended_to_vllm_additional_args_replacing_one_there() -> None:
    env = (
        "        env:\n          - name: VLLM_ADDITIONAL_ARGS\n"
        '            value: "--speculative-config \'{\\"method\\":\\"ngram\\"}\' '
        '--max-model-len 2048"\n'
    )
    (engine,) = engines_in(_service(env=env), "svc.yaml")
    argv = list(engine.argv)
    assert argv.count("--speculative-config") == 1
    assert argv[argv.index("--max-model-len") + 1] == "2048"
    assert argv.index("--max-model-len") < argv.index("--speculative-config")
    assert (_spec_config(engine) or {})["method"] == "eagle3"


@pytest.mark.parametrize(
    ("speculator", "env", "says"),
    [
        (
            EAGLE,
            "        env:\n          - name: VLLM_ADDITIONAL_ARGS\n            valueFrom:\n"
            "              configMapKeyRef: {name: args, key: args}\n",
            "valueFrom",
        ),
        ("    config:\n      method: ngram\n      num_speculative_tokens: 4\n", "", "strings"),
        ('    config:\n      num_speculative_tokens: "4"\n', "", "no method"),
        ("    model:\n      uri: gs://bucket/draft\n    config:\n      method: eagle3\n", "",
         "pvc://"),
        ("    model:\n      uri: hf://a/b\n      lora: {adapters: []}\n    config:\n"
         "      method: eagle3\n", "", "lora"),
    ],
)  # fmt: skip
def test_what_the_controller_or_api_server_refuses_is_bad_input(
    speculator: str, env: str, says: str
) -> None:
    with pytest.raises(InputError) as err:
        engines_in(_service(speculator, env=env), "svc.yaml")
    assert says in err.value.message
    assert err.value.line is not None


def test_the_draft_mount_maps_to_the_speculators_uri(tmp_path: Path) -> None:
    path = tmp_path / "svc.yaml"
    path.write_text(_service())
    out = io.StringIO()
    code = main(
        [
            "plan", "--platform", "h100", "--format", "json",
            "--model-path", f"Qwen/Qwen3-8B={MODELS / 'qwen3-8b'}",
            "--model-path", f"AngelSlim/Qwen3-8B_eagle3={MODELS / 'qwen3-8b-eagle3-angelslim'}",
            str(path),
        ],
        stdout=out,
    )  # fmt: skip
    assert code == 0, out.getvalue()
    plan = json.loads(out.getvalue())
    assert "speculator" in plan["groups"][0]["components"]
    assert plan["operator_engine"]["reading"]["speculative"] == "eagle3"
    Plan.model_validate(plan)
