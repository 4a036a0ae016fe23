"""Kthena's ModelBooster, read as the ModelServing its controller makes of it
(kvconfig.load.kubernetes.model_booster), against the controller's own test data: each
input ModelBooster of volcano-sh/kthena's ``convert/testdata/input`` beside the ModelServing
its unit test expects (``convert/testdata/expected``, the pairs of
``model_serving_test.go``), both kept unmodified in the real-file corpus."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvconfig.load.engines import engines_in
from kvconfig.load.kubernetes.model_booster import cache_path, mount_path
from kvconfig.load.reading import reading_of

DATA = (
    Path(__file__).parent
    / "realworld/files/volcano-sh/kthena/pkg/model-booster-controller/convert/testdata"
)
PAIRS = [
    ("input/model.yaml", "expected/model-serving.yaml"),
    ("input/pd-disaggregated-model-npu.yaml", "expected/disaggregated-model-serving.yaml"),
]


@pytest.mark.parametrize(("given", "made"), PAIRS)
def test_a_model_booster_reads_as_the_model_serving_its_controller_makes(
    given: str, made: str
) -> None:
    booster = engines_in(DATA / given, given)
    serving = engines_in(DATA / made, made)
    assert len(booster) == len(serving) > 0
    for b, s in zip(booster, serving, strict=True):
        assert b.argv == s.argv  # the engine command, word for word
        assert b.entry == s.entry and b.image == s.image
        assert dict(b.env) == dict(s.env)
        rb, rs = reading_of(b).to_json(), reading_of(s).to_json()
        rb.pop("model_uri")  # the ModelBooster names where its downloader fetches from
        rs.pop("model_uri")
        assert rb == rs


@pytest.mark.parametrize(
    ("uri", "path"),
    [  # model_serving_test.go's cases of GetMountPath and GetCachePath
        ("models/llama-2-7b", "/8590cc9fef9361779a5bd7862eb82b6d"),
        ("", "/d41d8cd98f00b204e9800998ecf8427e"),
        ("model_@#$", "/1f8d57abec22d679835ba0c38f634b06"),
    ],
)
def test_the_model_path_is_the_md5_of_its_uri(uri: str, path: str) -> None:
    assert mount_path(uri) == path


@pytest.mark.parametrize(
    ("uri", "path"),
    [
        ("pvc://my-cache-path////", "/my-cache-path"),
        ("pvc:///my-cache-path", "/my-cache-path"),
        ("pvc:////my-cache-path", "/my-cache-path"),
        ("", ""),
        ("hostpath://tmp/cache", "/tmp/cache"),
    ],
)
def test_the_cache_path_is_the_uri_s_host_and_path(uri: str, path: str) -> None:
    assert cache_path(uri) == path


def test_a_backend_whose_workers_are_no_list_is_bad_input(tmp_path: Path) -> None:
    """The CRD makes ``workers`` and ``env`` lists: anything else is refused, named."""
    from kvconfig.errors import InputError

    text = (DATA / "input/pd-disaggregated-model-npu.yaml").read_text()
    for broken in (text.replace("    workers:\n", "    workers: 5\n    other:\n"),
                   text.replace("    env:\n", "    env: true\n    other:\n")):  # fmt: skip
        path = tmp_path / "booster.yaml"
        path.write_text(broken)
        with pytest.raises(InputError, match="expected a list"):
            engines_in(path, str(path))


def test_a_model_serving_s_role_names_give_the_p_d_sides() -> None:
    """The model-booster controller names a disaggregated backend's roles ``prefill`` and
    ``decode``, and its ModelServer pairs them by those names: a ModelServing's role of
    either name is that side, with or without a KV connector; another name is neither."""

    def serving(names: tuple[str, ...]) -> str:
        pod = {"spec": {"containers": [{"name": "e", "image": "vllm/vllm-openai:v0.33.0",
                                        "args": ["m/x"]}]}}  # fmt: skip
        roles = [{"name": n, "replicas": 1, "entryTemplate": pod} for n in names]
        spec = {"replicas": 1, "template": {"roles": roles}}
        api = "workload.serving.volcano.sh/v1alpha1"
        head = {"apiVersion": api, "kind": "ModelServing", "metadata": {"name": "s"}}
        return json.dumps({**head, "spec": spec})

    found = engines_in(serving(("prefill", "decode")), "s.yaml")
    assert [e.role for e in found] == ["prefill", "decode"]
    (other,) = engines_in(serving(("leader",)), "s.yaml")
    assert other.role is None
