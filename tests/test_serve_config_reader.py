"""One reader of vLLM's config file, held to vLLM 0.33.0's own parser.

``kvconfig lint serve.yaml`` and ``kvconfig lint -- vllm serve --config serve.yaml`` read
the file the same way (``options_from_yaml`` goes through ``parse_serve_args``), and that
way is vLLM's: ``load_config_file`` turns the keys into arguments (a key given twice keeps
the last value, a dotted key merges into its option) and the JSON options are refused
exactly where vLLM's parser exits 2 (``tests/vllm_serve_parse.py`` runs the real parser).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kvconfig.errors import InputError
from kvconfig.load import yamlfile
from kvconfig.load.argv import parse_serve_args
from kvconfig.load.command import options_from_yaml

ROOT = Path(__file__).resolve().parent.parent
NIXL = '{"kv_connector": "NixlConnector", "kv_role": "kv_both"}'
_KV = "model: m\nkv-transfer-config:\n"

# name -> a serve config file (str) or the words after ``vllm serve`` (list)
CASES: dict[str, str | list[str]] = {
    "key twice, the last wins": "model: m\nblock_size: 16\nblock-size: 32\n",
    "dotted key under a JSON option": (
        f"model: m\nkv-transfer-config: {NIXL}\nkv-transfer-config.kv_role: kv_producer\n"
    ),
    "mapping": f"{_KV}  kv_connector: NixlConnector\n  kv_role: kv_both\n",
    "role producer": f"{_KV}  kv_connector: NixlConnector\n  kv_role: producer\n",
    "connector without role": f"{_KV}  kv_connector: NixlConnector\n",
    "unknown key": f"{_KV}  kv_connector: X\n  kv_role: kv_both\n  bad: 1\n",
    "human-readable number": (
        'model: m\nkv-transfer-config: \'{"kv_connector": "X", "kv_role": "kv_both", '
        '"kv_port": 1k}\'\n'
    ),
    "speculative mapping": (
        "model: m\nspeculative-config:\n  method: ngram\n  num_speculative_tokens: 3\n"
    ),
    "false flag": "model: m\nenforce-eager: false\nblock-size: 64\n",
    "merge keys": (
        "kv-transfer-config: &kv\n  kv_connector: NixlConnector\n  kv_role: kv_both\n"
        "<<: {block-size: 32, model: m}\nspeculative-config: {<<: {method: ngram}, "
        "num_speculative_tokens: 2}\n"
    ),
    "merge of no mapping": "model: m\nblock-size: &b 16\n<<: *b\n",
    "cli bad json": ["m", "--kv-transfer-config", "{bad"],
    "cli list": ["m", "--kv-transfer-config", "[1]"],
    "cli role": ["m", "--kv-transfer-config", '{"kv_connector": "X", "kv_role": "producer"}'],
    "cli dotted role": ["m", "--kv-transfer-config.kv_role", "producer"],
    "cli good": ["m", "--kv-transfer-config", NIXL, "--block-size", "32"],
    "cli none": ["m", "--kv-transfer-config", "None"],
    "cli speculative bad json": ["m", "--speculative-config", "{method: ngram}"],
    "cli speculative list": ["m", "--speculative-config", "[1]"],
    "cli compilation unknown key": ["m", "--compilation-config", '{"no_such": 1}'],
}


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("serve")
    for name, case in CASES.items():
        if isinstance(case, str):
            (d / f"{_slug(name)}.yaml").write_text(case)
    return d


def _slug(name: str) -> str:
    return name.replace(" ", "-").replace(",", "")


def _argv(name: str, folder: Path) -> list[str]:
    case = CASES[name]
    return case if isinstance(case, list) else ["--config", str(folder / f"{_slug(name)}.yaml")]


@pytest.fixture(scope="module")
def vllm_says(folder: Path) -> dict[str, Any]:
    cases = {name: _argv(name, folder) for name in CASES}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "vllm_serve_parse.py")],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    out: dict[str, Any] = json.loads(proc.stdout)
    return out


def _ours(name: str, folder: Path) -> dict[str, Any] | None:
    """kvconfig's reading (None: refused as bad input)."""
    try:
        args = parse_serve_args(_argv(name, folder), base=folder)
    except InputError:
        return None
    return {"model": args.model, **args.values}


def _json(value: Any) -> Any:
    """A JSON option's text as vLLM's parser decodes it ("None" is None; ``1k`` numbers)."""
    from kvconfig.mirror.json_options import _expand_numbers

    if value in ("", "None"):
        return None
    return json.loads(_expand_numbers(value)) if isinstance(value, str) else value


@pytest.mark.parametrize("name", CASES, ids=CASES.keys())
def test_refused_exactly_where_vllm_refuses(
    vllm_says: dict[str, Any], folder: Path, name: str
) -> None:
    theirs = vllm_says[name]
    ours = _ours(name, folder)
    assert (ours is None) == ("error" in theirs), (name, theirs, ours)
    if ours is None:
        return
    ns = theirs["ok"]
    assert ours.get("block-size") in (None, str(ns["block_size"]), ns["block_size"])
    kv = ns["kv_transfer_config"]
    mine = _json(ours.get("kv-transfer-config"))
    if kv is None:
        assert mine is None
    else:
        assert {k: kv[k] for k in ("kv_connector", "kv_role")} == {
            k: mine.get(k) for k in ("kv_connector", "kv_role")
        }
    assert _json(ours.get("speculative-config")) == ns["speculative_config"]


@pytest.mark.parametrize("name", [n for n, c in CASES.items() if isinstance(c, str)])
def test_the_file_and_the_command_read_alike(folder: Path, name: str) -> None:
    path = folder / f"{_slug(name)}.yaml"
    try:
        from_file = options_from_yaml(yamlfile.load(path, str(path)), "0.33.0").values
    except InputError as err:
        with pytest.raises(InputError) as again:
            parse_serve_args(["--config", str(path)], base=folder)
        assert err.message == again.value.message
        return
    args = parse_serve_args(["--config", str(path)], base=folder)
    assert from_file == {"model": args.model, **args.values}


def test_a_key_given_twice_keeps_the_last_value(folder: Path) -> None:
    path = folder / f"{_slug('key twice, the last wins')}.yaml"
    assert options_from_yaml(yamlfile.load(path, str(path)), "0.33.0").values["block-size"] == "32"
