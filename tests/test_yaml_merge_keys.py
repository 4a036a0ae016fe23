"""YAML merge keys (``<<``) read as PyYAML's ``safe_load`` reads them (the parser of
vLLM's ``--config``, SkyPilot and Ray Serve; go-yaml applies the same rules for
Kubernetes, Helm and compose), in every kind of file kvconfig reads."""

from __future__ import annotations

import pytest
import yaml

from kvconfig.errors import InputError
from kvconfig.load import yamlfile
from kvconfig.load.engines import engines_in
from kvconfig.load.reading import reading_of

CASES = {
    "an alias": "base: &b {x: 1, y: 2}\nz:\n  <<: *b\n  y: 3\n",
    "own keys win, before or after": "b: &b {x: 1, y: 2}\nz:\n  y: 3\n  <<: *b\n",
    "a list, the earlier wins": "a: &a {x: 1}\nb: &b {x: 2, y: 2}\nz:\n  <<: [*a, *b]\n",
    "an inline mapping": "z:\n  <<: {x: 1, y: [1, 2]}\n  x: 0\n",
    "nested merges": "a: &a {x: 1}\nb: &b\n  <<: *a\n  y: 2\nz: {<<: *b, w: 3}\n",
    "in a list item": "d: &d {image: v, args: [a]}\nl:\n  - <<: *d\n    name: one\n  - <<: *d\n",
    "at the top": "<<: {model: m, block-size: 32}\nblock-size: 16\n",
}


@pytest.mark.parametrize("name", CASES, ids=CASES.keys())
def test_merge_keys_read_as_pyyaml_reads_them(name: str) -> None:
    text = CASES[name]
    expected = yaml.safe_load(text)
    assert yamlfile.parse(text, "x.yaml").data == expected
    assert [d.data for d in yamlfile.parse_all(text, "x.yaml")] == [expected]


def test_a_merged_key_keeps_the_line_it_was_written_on() -> None:
    doc = yamlfile.parse("base: &b\n  x: 1\nz:\n  <<: *b\n  y: 2\n", "x.yaml")
    assert doc.data["z"] == {"x": 1, "y": 2}
    assert doc.lines[("z", "x")] == 2 and doc.lines[("z", "y")] == 5


@pytest.mark.parametrize("value", ["16", "[1, 2]", "[{x: 1}, 2]"])
def test_a_merge_of_no_mapping_is_refused_at_its_key(value: str) -> None:
    text = f"model: m\n<<: {value}\n"
    with pytest.raises(yaml.YAMLError):
        yaml.safe_load(text)
    with pytest.raises(InputError) as err:
        yamlfile.parse(text, "x.yaml")
    assert err.value.line == 2 and "merge key" in err.value.message


def test_a_manifest_with_merge_keys_is_read() -> None:
    """Two Deployments of a ``List`` whose containers share their settings through an
    anchor (go-yaml, behind ``kubectl apply``, merges them as PyYAML does)."""
    text = "apiVersion: v1\nkind: List\nitems:\n" + "".join(
        f"- apiVersion: apps/v1\n  kind: Deployment\n  metadata: {{name: {name}}}\n"
        "  spec:\n    template:\n      spec:\n        containers:\n"
        f"        - {container}\n"
        for name, container in (
            ("a", "&c\n          name: vllm\n          image: vllm/vllm-openai:v0.11.0\n"
                  "          args: [--model, Qwen/Qwen3-8B, --block-size, '32']"),
            ("b", "<<: *c\n          args: [--model, Qwen/Qwen3-8B]"),
        )
    )  # fmt: skip
    assert yamlfile.parse(text, "d.yaml").data == yaml.safe_load(text)
    got = [reading_of(e) for e in engines_in(text, "d.yaml")]
    assert [(r.model, r.block_size) for r in got] == [
        ("Qwen/Qwen3-8B", 32),
        ("Qwen/Qwen3-8B", None),
    ]
