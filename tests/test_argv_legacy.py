"""The separate speculative options of vLLM releases before 0.9 (``--speculative-model``,
``--num-speculative-tokens``...), folded into one speculative config as vLLM 0.8's
``EngineArgs.create_speculative_config`` folds them, for words written for such a
release and only for them."""

from __future__ import annotations

import json

import pytest

from kvconfig.errors import InputError
from kvconfig.load.argv import parse_serve_args
from kvconfig.load.argv_legacy import had_them

WORDS = [
    "facebook/opt-6.7b", "--speculative_model", "facebook/opt-125m",
    "--num-speculative-tokens=5", "--speculative-draft-tensor-parallel-size", "1", "-tp", "1",
]  # fmt: skip


def test_a_release_before_0_9_folds_them() -> None:
    args = parse_serve_args(WORDS, written_for="vLLM 0.7.3")
    assert json.loads(args.values["speculative-config"]) == {
        "model": "facebook/opt-125m",
        "num_speculative_tokens": 5,
        "draft_tensor_parallel_size": 1,
    }
    assert args.values["tensor-parallel-size"] == "1"
    assert [n.kind for n in args.notes] == ["legacy-speculative"]


@pytest.mark.parametrize("written_for", [None, "vLLM 0.10.2", "the vLLM of opea/vllm-gaudi:1.22.0"])
def test_no_other_release_does(written_for: str | None) -> None:
    if written_for is None:  # the release kvconfig plans for refuses them
        with pytest.raises(InputError, match="speculative"):
            parse_serve_args(WORDS)
        return
    args = parse_serve_args(WORDS, written_for=written_for)
    assert "speculative-config" not in args.values
    assert {n.kind for n in args.notes} == {"other-release"}


def test_an_explicit_config_or_a_run_time_count_is_left_alone() -> None:
    explicit = parse_serve_args(
        [*WORDS, "--speculative-config", '{"method": "ngram", "num_speculative_tokens": 3}'],
        written_for="vLLM 0.8.4",
    )
    assert json.loads(explicit.values["speculative-config"])["method"] == "ngram"
    later = parse_serve_args(
        ["m", "--speculative-model", "[ngram]", "--num-speculative-tokens", "$N"],
        written_for="vLLM 0.6.6",
    )
    assert "speculative-config" not in later.values


@pytest.mark.parametrize(
    ("written_for", "took"),
    [("vLLM 0.6.6", True), ("vLLM 0.8.5", True), ("vLLM 0.9.0", False), ("vLLM 1.0.0", False)],
)
def test_which_releases_took_them(written_for: str, took: bool) -> None:
    assert had_them(written_for) is took


@pytest.mark.parametrize(
    ("config", "method"),
    [
        # the examples SpeculativeConfig.__post_init__ names beside its rule
        ({"model": "yuhuili/EAGLE-LLaMA3-Instruct-8B"}, "eagle"),
        ({"model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"}, "eagle3"),
        ({"model": "AngelSlim/Qwen3-8B_eagle3", "method": "draft_model"}, "eagle3"),
        ({"model": "deepseek-ai/dspark_qwen3_8b_block7"}, "dspark"),
        ({"model": "[ngram]"}, "ngram"),
        ({"model": "facebook/opt-125m"}, "draft_model"),
        ({"model": "facebook/opt-125m", "method": "eagle"}, "eagle"),
    ],
)
def test_the_method_a_draft_models_name_gives(config: dict[str, str], method: str) -> None:
    from kvconfig.load.engines import engines_in
    from kvconfig.load.reading import reading_of

    script = f"vllm serve Qwen/Qwen3-8B --speculative-config '{json.dumps(config)}'\n"
    (engine,) = engines_in(script, "serve.sh")
    assert reading_of(engine).speculative == method


@pytest.mark.parametrize("value", ["false", "True", "FALSE"])
def test_an_old_boolean_flag_takes_its_value(value: str) -> None:
    """vLLM 0.8 and older declared ``--enable-chunked-prefill`` with ``StoreBoolean``,
    ``nargs="?"``: the next word true or false is its value, not a positional; a word that
    is neither, and a newer release, leave it a flag alone."""
    words = ["m", "--enable-chunked-prefill", value, "--max-model-len", "32000"]
    old = parse_serve_args(words, written_for="vLLM 0.7.0")
    assert old.values["max-model-len"] == "32000"
    assert any(value in n.message for n in old.notes if n.kind == "other-release")
    with pytest.raises(InputError):
        parse_serve_args(words)  # vLLM 0.33: the word is a second positional
    with pytest.raises(InputError):
        parse_serve_args(["m", "--enable-chunked-prefill", "maybe"], written_for="vLLM 0.7.0")
