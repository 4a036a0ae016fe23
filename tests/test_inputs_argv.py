"""``kvconfig.load.argv`` reads a serve argument list as vLLM 0.33.0's own parser does.

The parser is built as ``vllm serve`` builds it (``vllm/entrypoints/cli/main.py``: a
``FlexibleArgumentParser`` with the serve subcommand of
``vllm/entrypoints/cli/serve.py``), and every case is parsed by both.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kvconfig.errors import InputError
from kvconfig.load.argv import parse_serve_args
from kvconfig.load.argv_table import argv_from_kwargs, options
from kvconfig.mirror.argtypes import human_readable_int

pytestmark = pytest.mark.vllm
vllm = pytest.importorskip("vllm")

ROOT = Path(__file__).resolve().parent.parent


CONFIGS = {
    "serve.yaml": (
        "block-size: 32\nmax_model_len: 4096\nenforce-eager: true\n"
        "speculative-config:\n  method: eagle3\n  model: d\n"
    ),
    "model.yaml": "model: from-file\nblock-size: 64\n",
    "spec.yaml": "speculative-config:\n  method: eagle3\n  model: d\n",
    "small.yaml": "block-size: 32\n",
    "false.yaml": "enable_prefix_caching: false\nenforce-eager: false\n",
}


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("configs")
    for name, text in CONFIGS.items():
        (path / name).write_text(text, encoding="utf-8")
    return path


def _choice_cases() -> dict[str, list[str]]:
    """For every option with choices in the installed release's facts: each choice, each
    in upper and lower case, and a value that is none of them."""
    from kvconfig.mirror import versions

    cases: dict[str, list[str]] = {}
    for option, spec in versions.facts(vllm.__version__).serve_options.items():
        for k, choice in enumerate(spec.get("choices") or ()):
            for text in {choice, choice.upper(), choice.lower()}:
                cases[f"choice {option} {text}"] = ["m", option, text]
            cases[f"choice {option} #{k}="] = ["m", f"{option}={choice}"]
        if spec.get("choices"):
            cases[f"choice {option} none of them"] = ["m", option, "zz-none-of-them"]
    return cases


def _cases(folder: Path) -> dict[str, list[str]]:
    cases = {name: argv for name, argv in CASES.items()}
    cases.update(_choice_cases())
    cases.update({name: _cfg(argv, folder) for name, (argv, _) in CONFIG_CASES.items()})
    cases.update({name: argv for name, (argv, _) in REFUSED.items()})
    cases["__defaults__"] = ["m"]
    return cases


def _cfg(argv: list[str], folder: Path) -> list[str]:
    return [
        str(folder / w[1:]) if w.startswith("@") else w.replace("=@", f"={folder}/") for w in argv
    ]


@pytest.fixture(scope="module")
def vllm_says(folder: Path) -> dict[str, Any]:
    """What vLLM's own parser gives for every case (one fresh process)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "VLLM_TARGET_DEVICE": "cpu", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "vllm_serve_parse.py")],
        input=json.dumps(_cases(folder)),
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results: dict[str, Any] = json.loads(proc.stdout)
    return results


def _same(ours: Any, theirs: Any) -> bool:
    """Whether argparse's stored text (ours) is what vLLM's type function made of it."""
    if isinstance(theirs, bool) or theirs is None:
        return ours == theirs
    if isinstance(theirs, (int, float)):
        try:
            return float(ours) == theirs
        except ValueError:
            return human_readable_int(ours) == theirs
    if isinstance(theirs, list):
        return (
            isinstance(ours, list)
            and len(ours) == len(theirs)
            and all(_same(a, b) for a, b in zip(ours, theirs, strict=True))
        )
    if isinstance(theirs, dict):
        given = json.loads(ours)
        for key, value in given.items():
            got = theirs[key]
            if isinstance(value, (dict, list)):
                continue
            if got != value and str(got) != str(value):
                return False
        return True
    return str(ours) == str(theirs)


def _both(vllm_says: dict[str, Any], name: str, argv: list[str], folder: Path | None = None) -> Any:
    result = vllm_says[name]
    assert "ok" in result, result
    ns = result["ok"]
    defaults = vllm_says["__defaults__"]["ok"]
    ours = parse_serve_args(argv, base=folder)
    model = ns["model_tag"] if ns["model_tag"] is not None else ns["model"]
    assert ours.model == model
    for key, value in ours.values.items():
        dest = key.replace("-", "_")
        if dest in ("model", "config"):
            continue
        assert _same(value, ns[dest]), (key, value, ns[dest])
    changed = {
        k for k, v in ns.items()
        if k not in ("model_tag", "model", "config") and v != defaults.get(k)
    }  # fmt: skip
    assert changed <= {k.replace("-", "_") for k in ours.values}, changed
    return ours


CASES = {
    "positional model": ["Qwen/Qwen3-8B", "--block-size", "64"],
    "no model": ["--block-size", "16"],
    "model after options": ["--block-size", "16", "--enforce-eager", "m"],
    "--model option": ["--block-size", "16", "--model", "m", "-tp", "2"],
    "--model=": ["--model=m", "--max-model-len", "4096"],
    "underscores": [
        "m",
        "--block_size",
        "32",
        "--max_model_len=8192",
        "--gpu_memory_utilization",
        "0.8",
    ],
    "--k=v": ["m", "--block-size=128", "--attention-backend=FLASHINFER"],
    "last wins": [
        "m",
        "--block-size",
        "16",
        "--block-size",
        "32",
        "-tp",
        "2",
        "--tensor-parallel-size=4",
    ],
    "flags and negations": [
        "m",
        "--enable-prefix-caching",
        "--no-enable-prefix-caching",
        "--disable-log-stats",
    ],
    "enable/disable pair": ["m", "--disable-prefix-caching", "--enable-chunked-prefill"],
    "dotted keys": [
        "m",
        "--speculative-config.method",
        "eagle3",
        "--speculative_config.model",
        "d",
        "--speculative-config.num_speculative_tokens",
        "3",
    ],
    "dotted replaces whole": [
        "m",
        "--speculative-config",
        '{"model": "d", "method": "eagle3"}',
        "--speculative-config.num_speculative_tokens",
        "3",
    ],
    "dotted =": ["m", "--compilation-config.cudagraph_mode=PIECEWISE", "-cc.mode", "3"],
    "whole JSON": [
        "m",
        "--speculative-config",
        '{"model": "d", "method": "eagle3", "num_speculative_tokens": 3}',
    ],
    "nargs +": ["m", "--served-model-name", "a", "b", "--block-size", "8"],
    "names swallow the model": ["--served-model-name", "a", "--model", "m"],
    "negative value": ["m", "--max-model-len", "-1"],
    "-O3": ["m", "-O3"],
    "-O 2": ["m", "-O", "2"],
    "optional value": ["m", "--hf-token", "--block-size", "8"],
    "abbreviation": ["m", "--block", "8", "--max-model", "1024"],
    "human int": ["m", "--max-model-len", "32k"],
    "append": ["m", "--middleware", "a.b", "--middleware", "c.d"],
}


CONFIG_CASES = {
    "config under the command line": (["m", "--config", "@serve.yaml", "--block-size", "16"], None),
    "model from the config file": (["--config", "@model.yaml"], None),
    "dotted keys replace the file's value": (
        ["m", "--config", "@spec.yaml", "--speculative-config.num_speculative_tokens", "2"],
        None,
    ),
    "--config= ignored": (["m", "--config=@small.yaml"], None),
    "false key with underscores dropped": (["m", "--config", "@false.yaml"], None),
}

REFUSED = {
    "unknown option": (["m", "--blok-size", "16"], "unknown vLLM 0.33.0 option '--blok-size'"),
    "two models": (["a", "b"], "unrecognized arguments: b"),
    "--model and positional": (["a", "--model", "b"], "unrecognized arguments"),
    "one word with a space": (["m", "--block-size 16"], "unrecognized arguments: --block-size 16"),
    "missing value": (["m", "--block-size"], "needs a value"),
    "ambiguous prefix": (["m", "--enable", "x"], "ambiguous option: --enable"),
    "served name without model": (
        ["--served-model-name", "x", "--block-size", "8"],
        "--served-model-name without a model",
    ),
}


@pytest.mark.parametrize("name", CASES, ids=CASES.keys())
def test_reads_as_vllm_does(vllm_says: dict[str, Any], name: str) -> None:
    _both(vllm_says, name, CASES[name])


def test_last_occurrence_wins_and_is_noted(vllm_says: dict[str, Any]) -> None:
    ours = _both(vllm_says, "last wins", CASES["last wins"])
    assert ours.values["block-size"] == "32"
    assert {n.kind for n in ours.notes} == {"repeated"}


def test_dotted_keys_after_a_whole_value_replace_it(vllm_says: dict[str, Any]) -> None:
    # vLLM 0.33.0 appends the dotted keys as a new JSON value: the model and method are lost
    ours = _both(vllm_says, "dotted replaces whole", CASES["dotted replaces whole"])
    assert json.loads(ours.values["speculative-config"]) == {"num_speculative_tokens": 3}
    assert "dotted-replaces" in {n.kind for n in ours.notes}


def _config_case(vllm_says: dict[str, Any], name: str, folder: Path) -> Any:
    return _both(vllm_says, name, _cfg(CONFIG_CASES[name][0], folder), folder)


def test_config_file_is_under_the_command_line(vllm_says: dict[str, Any], folder: Path) -> None:
    ours = _config_case(vllm_says, "config under the command line", folder)
    assert ours.values["block-size"] == "16"
    assert ours.origins["block-size"] == "command line"
    assert ours.values["max-model-len"] == "4096"
    assert ours.origins["max-model-len"] == str(folder / "serve.yaml")


def test_model_from_the_config_file(vllm_says: dict[str, Any], folder: Path) -> None:
    assert _config_case(vllm_says, "model from the config file", folder).model == "from-file"


def test_dotted_keys_replace_the_config_files_value(
    vllm_says: dict[str, Any], folder: Path
) -> None:
    ours = _config_case(vllm_says, "dotted keys replace the file's value", folder)
    assert json.loads(ours.values["speculative-config"]) == {"num_speculative_tokens": 2}


def test_config_equals_path_is_ignored(vllm_says: dict[str, Any], folder: Path) -> None:
    # vLLM issue #43252: --config=FILE is stored and the file never read
    ns = vllm_says["--config= ignored"]["ok"]
    assert ns["block_size"] is None and ns["config"] == str(folder / "small.yaml")
    ours = _config_case(vllm_says, "--config= ignored", folder)
    assert "block-size" not in ours.values
    assert [n.kind for n in ours.notes] == ["config-equals-ignored"]


def test_a_false_key_with_underscores_in_a_config_file_is_dropped(
    vllm_says: dict[str, Any], folder: Path
) -> None:
    # vLLM looks for --no-enable_prefix_caching, which does not exist, and drops the key
    assert vllm_says["false key with underscores dropped"]["ok"]["enable_prefix_caching"] is None
    ours = _config_case(vllm_says, "false key with underscores dropped", folder)
    assert "enable-prefix-caching" not in ours.values
    assert [n.kind for n in ours.notes] == ["config-value-dropped"]


@pytest.mark.parametrize("name", REFUSED, ids=REFUSED.keys())
def test_refuses_what_vllm_refuses(vllm_says: dict[str, Any], name: str) -> None:
    argv, message = REFUSED[name]
    assert "error" in vllm_says[name], vllm_says[name]
    with pytest.raises(InputError) as err:
        parse_serve_args(argv)
    assert message in str(err.value)


def test_engine_keyword_arguments_as_words() -> None:
    kwargs = {
        "tensor_parallel_size": 2,
        "block_size": 64,
        "enable_prefix_caching": False,
        "enforce_eager": True,
        "speculative_config": {"method": "ngram", "num_speculative_tokens": 3},
        "served_model_name": ["a", "b"],
        "gpu_memory_utilization": 0.9,
        "max_model_len": None,
    }
    ours = parse_serve_args(["m", *argv_from_kwargs(kwargs)])
    assert ours.values == {
        "tensor-parallel-size": "2",
        "block-size": "64",
        "enable-prefix-caching": False,
        "enforce-eager": True,
        "speculative-config": '{"method": "ngram", "num_speculative_tokens": 3}',
        "served-model-name": ["a", "b"],
        "gpu-memory-utilization": "0.9",
    }


def test_the_option_table_is_the_installed_parsers(vllm_says: dict[str, Any]) -> None:
    fresh = vllm_says["__options__"]
    assert {k: tuple(v) for k, v in fresh.items()} == dict(options("0.33.0"))


def test_choices_are_checked_as_vllm_checks_them(vllm_says: dict[str, Any]) -> None:
    """argparse refuses a value outside an option's choices (after vLLM's type, which
    lowers some): kvconfig refuses only values vLLM refuses, and every single value
    matching no choice in any case (a list option's values, and numeric choices, which
    vLLM's int type checks first, are not checked)."""
    cases = _choice_cases()
    assert len([n for n in cases if n.endswith("none of them")]) >= 30
    for name, argv in cases.items():
        try:
            parse_serve_args(argv)
        except InputError as err:
            assert "error" in vllm_says[name], (name, str(err))
            assert "invalid choice" in str(err), (name, str(err))
            continue
        option = argv[1].split("=")[0]
        lowered = {c.lower() for c in _choices_of(option)}
        if options(vllm.__version__)[option][1] == "+" or any(c.isdigit() for c in lowered):
            continue  # a list option, or numeric choices: vLLM's type checks them first
        assert "ok" in vllm_says[name] or argv[-1].split("=")[-1].lower() in lowered, name
        assert not name.endswith("none of them"), name


def _choices_of(option: str) -> list[str]:
    from kvconfig.mirror import versions

    return [str(c) for c in versions.facts(vllm.__version__).serve_options[option]["choices"]]


@pytest.mark.parametrize("word", ["$EXTRA_ARGS", "${ARGS[@]}", "$(cat args)", "`cat a`"])
def test_a_run_time_word_after_the_model_is_noted_not_refused(word: str) -> None:
    """A word after the model only known at run time may be no word at all or options
    (vLLM accepts ``m`` alone and ``m --block-size 32``, refuses ``m x``): kvconfig
    cannot tell, so it notes that more arguments may come (KV805), and refuses nothing."""
    ours = parse_serve_args(["m", word, "--block-size", "16"])
    assert ours.model == "m" and ours.values["block-size"] == "16"
    assert [(n.kind, n.key) for n in ours.notes] == [("runtime-arguments", word)]
    with pytest.raises(InputError, match="unrecognized arguments: x"):
        parse_serve_args(["m", word, "x"])


@pytest.mark.parametrize(
    ("value", "refused"),
    [
        # bash brace-expands an unquoted {"k":"v","r":"p"} into k:v r:p (Kthena's bash -c)
        ("kv_connector:MooncakeConnector", True),
        ("{bad", True),
        # a key 0.33's KVTransferConfig lacks may be one the release that runs has
        ('{"kv_connector": "NixlConnector", "kv_role": "kv_both", "kv_ip": "x"}', False),
    ],
)
def test_text_that_is_no_json_is_refused_for_every_release(value: str, refused: bool) -> None:
    """Every release reads ``--kv-transfer-config`` with ``json.loads``: words written for
    another release are refused when they are no JSON at all, and keep the other-release
    leniency for what only some release's dataclass refuses."""
    words = ["m", "--kv-transfer-config", value]
    if refused:
        with pytest.raises(InputError, match="invalid JSON"):
            parse_serve_args(words, written_for="the vLLM of vllm-prefill:latest")
        return
    args = parse_serve_args(words, written_for="the vLLM of vllm-prefill:latest")
    assert json.loads(args.values["kv-transfer-config"])["kv_connector"] == "NixlConnector"


@pytest.mark.parametrize("command", [False, True])
def test_a_key_given_twice_in_a_config_file_keeps_its_last_value(
    tmp_path: Path, command: bool
) -> None:
    """vLLM's ``load_config_file`` reads the file with PyYAML's ``safe_load``, which keeps
    a key's last value: so does kvconfig, on both paths, with KV806."""
    import yaml

    from kvconfig.load.command import options_from_argv, options_from_yaml
    from kvconfig.load.yamlfile import parse

    text = "model: m\nblock-size: 16\nblock-size: 32\n"
    (tmp_path / "serve.yaml").write_text(text)
    assert yaml.safe_load(text)["block-size"] == 32  # vLLM's reader
    if command:
        opts = options_from_argv(
            ["m", "--config", "serve.yaml"], version="0.33.0", base=tmp_path, source="<command>"
        )
    else:
        doc = parse(text, str(tmp_path / "serve.yaml"), last_wins=True)
        opts = options_from_yaml(doc, "0.33.0")
    assert str(opts.values["block-size"]) == "32"
    assert [n.code.value for n in opts.notices] == ["KV806"]


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        # production-stack values: Helm keeps the last value (helm/helm#4107)
        (
            "servingEngineSpec:\n  modelSpec:\n  - name: a\n    repository: vllm/vllm-openai\n"
            "    tag: latest\n    modelURL: m\n    replicaCount: 1\n    replicaCount: 2\n",
            True,
        ),
        # a Kubernetes manifest: kubectl refuses it ("mapping key already defined")
        ("apiVersion: apps/v1\nkind: Deployment\nkind: StatefulSet\nmetadata: {name: x}\n", False),
        # a compose file: compose-go refuses it
        ("services:\n  a:\n    image: vllm/vllm-openai\n    image: x\n", False),
        # kvconfig's own files
        ("kvconfig: 1\nkvconfig: 1\n", False),
    ],
)
def test_a_key_given_twice_is_read_as_the_files_runtime_reads_it(text: str, kept: bool) -> None:
    from kvconfig.errors import DuplicateKey
    from kvconfig.load.documents import load_documents
    from kvconfig.load.sources import read_text

    if kept:
        (doc,), _ = load_documents(text, "values.yaml")
        assert doc.data["servingEngineSpec"]["modelSpec"][0]["replicaCount"] == 2
        assert [d[0] for d in doc.duplicates] == ["servingEngineSpec.modelSpec.0.replicaCount"]
        read_text(text, "values.yaml", Path("."))
        return
    with pytest.raises(DuplicateKey):
        load_documents(text, "f.yaml")
    with pytest.raises(DuplicateKey):
        read_text(text, "f.yaml", Path("."))
