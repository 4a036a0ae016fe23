"""The shipped catalogs: schema, runtime reading and ``kvconfig catalog``."""

from __future__ import annotations

import io
import json
import random

import pytest

from kvconfig.cli import main
from kvconfig.load.platforms import parse_platform
from kvconfig.mirror import versions
from kvconfig.mirror.catalog import SizeContext, load_catalog
from kvconfig.report.catalog import context_for
from kvconfig.schemas.catalog import Catalog
from kvconfig.schemas.sizes import MultipleOf, format_sizes
from tools.catalog.learn import FACTS, learn_rules

VERSIONS = versions.KNOWN


def _run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(argv), stdout=out)
    return code, out.getvalue()


def test_every_known_version_ships_its_data_and_nothing_else_is_shipped() -> None:
    shipped = sorted(p.name for p in versions.DATA.iterdir() if p.is_dir())
    assert shipped == [f"vllm-{v}" for v in VERSIONS]
    for v in VERSIONS:
        assert (versions.folder(v) / "facts.json").is_file()
        assert versions.catalog_file(v).is_file()


@pytest.mark.parametrize("version", VERSIONS)
def test_catalog_validates(version: str) -> None:
    doc = json.loads(versions.catalog_file(version).read_text(encoding="utf-8"))
    cat = Catalog.model_validate(doc)
    assert cat.vllm_version == version
    classes = [b.class_path for b in cat.backends]
    assert classes == sorted(classes)
    assert len(set(classes)) == len(classes)
    for b in cat.backends:
        assert b.rules[-1].when == type(b.rules[-1].when)(), b.class_path
        assert b.source.startswith("vllm/") and ":" in b.source, b.class_path


@pytest.mark.parametrize("version", VERSIONS)
def test_registry_points_into_the_catalog(version: str) -> None:
    cat = load_catalog(version)
    raw = json.loads(versions.catalog_file(version).read_text(encoding="utf-8"))
    walked = set(raw["unimportable_modules"])
    for name, path in {**cat.registry, **cat.mamba_registry}.items():
        module = path.rsplit(".", 1)[0]
        # a registry target is catalogued, or its module does not exist at all
        assert path in cat.by_class or module not in walked, name
    assert cat.lookup("FLASHINFER").class_path.endswith("flashinfer.FlashInferBackend")


def _ctx(**kw: object) -> SizeContext:
    base: dict[str, object] = dict(
        vendor="cuda",
        capability_major=9,
        kv_quant="none",
        head_size=128,
        head_size_v=128,
        gqa=True,
        trtllm=False,
        fa_version=3,
        tokens_per_state=1,
    )
    base.update(kw)
    return SizeContext(**base)  # type: ignore[arg-type]


def test_rules_first_match_and_scale() -> None:
    cat = load_catalog("0.33.0")
    glm = cat.by_class["vllm.v1.attention.backends.mla.indexer.Glm5NextIndexerBackend"]
    one = glm.sizes(_ctx(tokens_per_state=1))
    four = glm.sizes(_ctx(tokens_per_state=4))
    assert all(isinstance(s, int) for s in one)
    assert four == tuple(4 * s for s in one if isinstance(s, int))


def test_every_entry_has_a_rule_that_holds_for_any_layer() -> None:
    rng = random.Random(11)
    contexts = [_ctx(vendor="nowhere", capability_major=None)]
    contexts += [_random_ctx(rng) for _ in range(200)]
    for entry in load_catalog(versions.DEFAULT).entries:
        for ctx in contexts:
            assert entry.rule_for(ctx).matches(ctx), (entry.class_path, ctx)


def test_an_entry_without_an_unconditional_rule_says_so() -> None:
    from kvconfig.mirror.catalog import parse_catalog

    raw = {"name": "X", "class": "x.X", "source": "x.py:1"}
    rules = [{"when": {"vendor": ["cuda"]}, "sizes": [16]}]
    entry = parse_catalog({"vllm_version": "", "backends": [{**raw, "rules": rules}]}).entries[0]
    assert entry.sizes(_ctx(vendor="cuda")) == (16,)
    with pytest.raises(ValueError, match="no size rule holds"):
        entry.rule_for(_ctx(vendor="rocm"))


def test_catalog_table_lists_every_class() -> None:
    code, text = _run("catalog")
    assert code == 0
    cat = load_catalog("0.33.0")
    assert len(text.splitlines()) == sum(len(e.rules) for e in cat.entries)


def test_catalog_json_shape() -> None:
    code, text = _run("catalog", "--format", "json")
    assert code == 0
    doc = json.loads(text)
    assert isinstance(doc, list) and len(doc) == len(load_catalog("0.33.0").entries)
    for item in doc:
        assert {"name", "class", "rules"} <= set(item)
        assert all("sizes" in r and "when" in r for r in item["rules"])


@pytest.mark.parametrize("platform", ["b200", "h200", "a100", "mi300x", "rtx 5090"])
def test_backend_on_platform_prints_sizes_and_why(platform: str) -> None:
    code, text = _run("catalog", "--backend", "FLASHINFER", "--platform", platform)
    assert code == 0
    entry = load_catalog("0.33.0").lookup("FLASHINFER")
    ctx = context_for(parse_platform(platform))
    rule = entry.rule_for(ctx)
    assert f": {format_sizes(entry.sizes(ctx))}" in text
    assert f"because rule {entry.rules.index(rule) + 1} matches: {rule.describe()}" in text
    assert "source: vllm/v1/attention/backends/flashinfer.py:" in text


def test_unknown_backend_is_an_input_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = _run("catalog", "--backend", "FLASHINFERR")
    assert code == 2
    assert "FLASHINFER" in capsys.readouterr().err


def _synthetic(ctx: SizeContext) -> tuple[int | MultipleOf, ...]:
    """A made-up backend with nested conditions, for the learner."""
    if ctx.vendor == "xpu":
        return (MultipleOf(64),)
    if ctx.capability_major == 10 and ctx.gqa and ctx.trtllm:
        return (16, 32, 64, 128)
    if ctx.kv_quant != "none" and ctx.head_size == 512:
        return (64,)
    return (MultipleOf(16),)


def _random_ctx(rng: random.Random) -> SizeContext:
    return _ctx(
        vendor=rng.choice(["cuda", "rocm", "xpu"]),
        capability_major=rng.choice([8, 9, 10, 12]),
        kv_quant=rng.choice(["none", "fp8_per_tensor", "nvfp4"]),
        head_size=rng.choice([64, 80, 128, 512]),
        gqa=rng.random() < 0.5,
        trtllm=rng.random() < 0.5,
        fa_version=rng.choice([2, 3, 4, None]),
    )


def test_learner_reproduces_its_samples_deterministically() -> None:
    rng = random.Random(7)
    samples = [(c, _synthetic(c)) for c in (_random_ctx(rng) for _ in range(3000))]
    rules = learn_rules(samples, "synthetic")
    assert rules == learn_rules(list(reversed(samples)), "synthetic")
    assert "when" not in rules[-1]
    from kvconfig.mirror.catalog import parse_catalog

    entry = parse_catalog(
        {
            "vllm_version": "",
            "backends": [{"name": "X", "class": "x.X", "rules": rules, "source": "x.py:1"}],
        }
    ).entries[0]
    for ctx, sizes in samples:
        assert entry.sizes(ctx) == sizes
    assert set(FACTS) >= {k for r in rules for k in r.get("when", {})} - {
        "kv_quant_not",
        "head_size_not",
    }


def _by_name(ctx: SizeContext) -> tuple[int | MultipleOf, ...]:
    """A made-up backend that reads the cache dtype's name, as vLLM 0.31.0's FlashAttention
    does without a spec (``_get_sm90_fa4_fp8_kv_block_size``): 64-token pages on SM90 at
    head size 512 under FA4 for ``fp8`` and ``fp8_e4m3``, not ``fp8_e5m2`` or ``fp8_inc``."""
    if (
        ctx.capability_major == 9
        and ctx.head_size == 512
        and ctx.fa_version == 4
        and ctx.cache_dtype in ("fp8", "fp8_e4m3")
    ):
        return (64,)
    return (MultipleOf(16),)


def test_the_learner_tests_the_cache_dtype_name_only_where_the_mode_cannot_tell() -> None:
    from kvconfig.mirror import platform

    rng = random.Random(5)
    names = ["auto", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc"]
    contexts = []
    for c in (_random_ctx(rng) for _ in range(3000)):
        name = rng.choice(names)
        contexts.append(c._replace(cache_dtype=name, kv_quant=platform.kv_quant(name)))
    named = [(c, _by_name(c)) for c in contexts]
    rules = learn_rules(named, "by name")
    assert any("cache_dtype" in r.get("when", {}) for r in rules)
    from kvconfig.mirror.catalog import parse_catalog

    entry = parse_catalog(
        {
            "vllm_version": "",
            "backends": [{"name": "X", "class": "x.X", "rules": rules, "source": "x.py:1"}],
        }
    ).entries[0]
    for ctx, sizes in named:
        assert entry.sizes(ctx) == sizes
    plain = learn_rules([(c, _synthetic(c)) for c in contexts], "synthetic")
    assert not any("cache_dtype" in r.get("when", {}) for r in plain)
