"""The hooks inside vLLM 0.33.0's real start-up code, on CPU under an emulated SM90.

The seed configuration: Qwen3-8B-shaped target layers on FLASHINFER, one EAGLE3 draft
layer on TRITON_ATTN, B=128. The layers' specs go through vLLM's own
``get_kv_cache_spec`` (which runs ``customize_attention_spec``), the groups through
``get_kv_cache_groups``; the runner's attention groups come from the real
``init_attn_backend`` and the speculator's from the real ``DraftModelSpeculator.set_attn``.
Only what needs a GPU is stood in for: the model's attention layers (objects that answer
``get_attn_backend``/``get_kv_cache_spec``) and the metadata builders' device work.
"""

from __future__ import annotations

import json
import logging
import pickle
import types
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

pytest.importorskip("vllm")

import torch

import hooks
from hooks import _enforce, _observe
from kvconfig.errors import KernelBlockSizeMismatch
from tools.catalog.emulate import load

FLASHINFER = "vllm.v1.attention.backends.flashinfer.FlashInferBackend"
TRITON = "vllm.v1.attention.backends.triton_attn.TritonAttentionBackend"
TARGET = [f"model.layers.{i}.self_attn.attn" for i in range(4)]
DRAFT = "draft_model.model.layers.0.self_attn.attn"
SPECULATORS = {
    "eagle": "vllm.v1.worker.gpu.spec_decode.eagle.speculator.EagleSpeculator",
    "mtp": "vllm.v1.worker.gpu.spec_decode.mtp.speculator.MTPSpeculator",
    "draft_model": "vllm.v1.worker.gpu.spec_decode.standalone_ar.speculator.StandaloneARSpeculator",
}
CPU = torch.device("cpu")

# Import vLLM's worker modules under the neutral platform: under an emulated CUDA they
# would load CUDA-only kernels (tools.catalog.emulate.load).
for _module in (
    "vllm.v1.worker.gpu.attn_utils",
    "vllm.v1.worker.gpu.model_runner",
    "vllm.v1.worker.gpu_model_runner",
    "vllm.v1.core.kv_cache_planning",
    "vllm.v1.spec_decode.eagle",
    *SPECULATORS.values(),
):
    load(_module)


class Builder:
    """Metadata builder without device work: all ``init_attn_backend`` asks of one."""

    requires_block_table_width = False
    supports_draft_decode_metadata_update = True

    def __init__(self, spec: Any, layer_names: list[str], config: Any, device: Any, **kw: Any):
        self.kv_cache_spec = spec

    @classmethod
    def get_cudagraph_support(cls, config: Any, spec: Any) -> Any:
        from vllm.v1.attention.backend import AttentionCGSupport

        return AttentionCGSupport.ALWAYS


def make_layer(backend: type, block_size: int, *, draft: bool = False) -> Any:
    """An attention layer as ``get_layers_from_vllm_config`` finds it."""
    from vllm.model_executor.layers.attention_layer_base import AttentionLayerBase
    from vllm.v1.kv_cache_interface import FullAttentionSpec

    class Layer(AttentionLayerBase):
        num_heads = 32
        kv_sharing_target_layer_name = None

        def get_attn_backend(self) -> Any:
            return backend

        def get_kv_cache_spec(self, vllm_config: Any) -> Any:
            return FullAttentionSpec(
                block_size=block_size, num_kv_heads=8, head_size=128, dtype=torch.bfloat16
            )

    layer = Layer()
    layer.is_draft_layer = draft
    return layer


@dataclass
class Engine:
    """The seed deployment, up to KV-cache initialisation."""

    config: Any
    kv_cache_config: Any
    block_size: int

    def runner_backend(self) -> tuple[list[list[Any]], list[int]]:
        """What ``GPUModelRunner.initialize_kv_cache`` gets from ``init_attn_backend``."""
        from vllm.v1.worker.gpu import attn_utils

        groups, _, sizes = attn_utils.init_attn_backend(
            self.kv_cache_config, self.config, CPU, draft_layer_names={DRAFT}
        )
        return groups, sizes

    def speculator(self, method: str = "eagle") -> Any:
        """A speculator with just the attributes ``set_attn`` reads."""
        sp = object.__new__(load(SPECULATORS[method]))
        sp.vllm_config = self.config
        sp.device = CPU
        sp.draft_attn_layer_names = {DRAFT}
        sp.num_speculative_steps = 3
        sp.max_num_tokens = 64
        sp.max_num_reqs = 4
        sp.speculative_config = types.SimpleNamespace(kv_cache_dtype=None)
        return sp

    def block_tables(self) -> Any:
        return types.SimpleNamespace(num_kv_cache_groups=len(self.kv_cache_config.kv_cache_groups))

    def set_attn(self, sp: Any, runner_groups: list[list[Any]]) -> None:
        """The runner's call (``vllm/v1/worker/gpu/model_runner.py``)."""
        sp.set_attn(None, self.kv_cache_config, self.block_tables(), None, runner_groups)

    def runner(self) -> Any:
        """A model runner holding what ``initialize_kv_cache`` sets before ``set_attn``."""
        return types.SimpleNamespace(
            kv_cache_config=self.kv_cache_config,
            vllm_config=self.config,
            attn_groups=[],
            kernel_block_sizes=None,
            speculator=None,
        )

    def initialize_kv_cache(self, runner: Any, sp: Any, *, kind: str = "v2") -> None:
        """Model Runner V2's steps up to the KV-cache binding, inside the hooks' session."""
        with _enforce.kv_cache_session(runner, kind):
            runner.attn_groups, runner.kernel_block_sizes = self.runner_backend()
            runner.speculator = sp
            self.set_attn(sp, runner.attn_groups)


def build(config: Any, block_size: int, monkeypatch: pytest.MonkeyPatch) -> Engine:
    """Specs, groups and KV-cache config of the seed, by vLLM's own functions."""
    from vllm.v1.core.kv_cache_planning import get_kv_cache_groups
    from vllm.v1.kv_cache_interface import KVCacheConfig, KVCacheTensor
    from vllm.v1.worker.gpu import attn_utils

    fi, triton = load(FLASHINFER), load(TRITON)
    for backend in (fi, triton):
        monkeypatch.setattr(backend, "get_builder_cls", staticmethod(lambda: Builder))
    config.compilation_config.static_forward_context = {
        **{name: make_layer(fi, block_size) for name in TARGET},
        DRAFT: make_layer(triton, block_size, draft=True),
    }
    config.cache_config.kv_sharing_fast_prefill = False
    config.parallel_config.use_ubatching = False
    config.scheduler_config = types.SimpleNamespace(
        max_num_seqs=4, disable_hybrid_kv_cache_manager=False
    )
    config.model_config.max_model_len = 1024
    config.speculative_config = types.SimpleNamespace(method="eagle3")
    config.attention_config.hisparse_config = None
    specs = attn_utils.get_kv_cache_spec(config)
    groups = get_kv_cache_groups(config, specs)
    num_blocks = 8
    tensors = [
        KVCacheTensor(
            size=s.page_size_bytes * num_blocks,
            layers=[name],
            layer_stride=s.page_size_bytes * num_blocks,
            block_stride=s.page_size_bytes,
        )
        for name, s in specs.items()
    ]
    kv = KVCacheConfig(num_blocks=num_blocks, kv_cache_tensors=tensors, kv_cache_groups=groups)
    return Engine(config, kv, block_size)


@pytest.fixture
def engine(emulated_sm90: Any, monkeypatch: pytest.MonkeyPatch) -> Engine:
    return build(emulated_sm90, 128, monkeypatch)


@pytest.fixture
def mode() -> Iterator[Any]:
    """Install the hooks in a mode for one test; remove them afterwards."""

    def use(name: str) -> Any:
        return hooks.install(name)

    yield use
    hooks.uninstall()


@pytest.fixture
def kvlog(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """The hooks' log lines (vLLM's ``vllm`` logger does not propagate to the root)."""
    log = logging.getLogger("vllm.kvconfig")
    level, propagate = log.level, log.propagate
    log.setLevel(logging.DEBUG)
    log.propagate = False  # counted once, whether or not ``vllm`` propagates
    log.addHandler(caplog.handler)
    yield caplog
    log.removeHandler(caplog.handler)
    log.setLevel(level)
    log.propagate = propagate


def draft_group(sp: Any) -> Any:
    (group,) = [g for groups in sp.attn_groups for g in groups if DRAFT in g.layer_names]
    return group


def effective(group: Any) -> int:
    return group.kernel_block_size or group.kv_cache_spec.block_size


def test_every_speculator_subclass_passes_through_the_hook() -> None:
    """A subclass that overrides set_attn must call super(): the class-level wrapper on
    DraftModelSpeculator then runs for it too."""
    import pkgutil

    from vllm.v1.worker.gpu import spec_decode
    from vllm.v1.worker.gpu.spec_decode.speculator import DraftModelSpeculator

    for info in pkgutil.walk_packages(spec_decode.__path__, spec_decode.__name__ + "."):
        try:
            load(info.name)
        except Exception:  # a module that needs a GPU to import; its classes are not seen
            continue

    def subclasses(cls: type) -> list[type]:
        return [s for c in cls.__subclasses__() for s in (c, *subclasses(c))]

    found = {c.__name__: "set_attn" in c.__dict__ for c in subclasses(DraftModelSpeculator)}
    assert {"EagleSpeculator", "MTPSpeculator", "DFlashSpeculator"} <= set(found)
    assert {name for name, overrides in found.items() if overrides} == {
        "DFlashSpeculator",
        "StandaloneARSpeculator",
    }
    for cls in subclasses(DraftModelSpeculator):
        if "set_attn" in cls.__dict__:
            names = cls.__dict__["set_attn"].__code__.co_names
            assert "super" in names and "set_attn" in names, cls


def test_seed_groups_as_vllm_does(engine: Engine) -> None:
    """One UniformTypeKVCacheSpecs group holds target and draft layers; specs differ."""
    from vllm.v1.kv_cache_interface import UniformTypeKVCacheSpecs

    (group,) = engine.kv_cache_config.kv_cache_groups
    assert isinstance(group.kv_cache_spec, UniformTypeKVCacheSpecs)
    assert sorted(group.layer_names) == sorted([*TARGET, DRAFT])
    specs = group.kv_cache_spec.kv_cache_specs
    assert specs[TARGET[0]] != specs[DRAFT]


@pytest.mark.parametrize("installed", ["none", "off"])
def test_without_hooks_the_bug_reproduces(engine: Engine, mode: Any, installed: str) -> None:
    if installed == "off":
        assert mode("off").active is False
    groups, sizes = engine.runner_backend()
    sp = engine.speculator()
    engine.set_attn(sp, groups)
    assert sizes == [64]
    assert {effective(g) for gs in groups for g in gs} == {64}
    assert effective(draft_group(sp)) == 128
    assert draft_group(sp).kernel_block_size is None


@pytest.mark.parametrize("method", sorted(SPECULATORS))
def test_enforce_hands_the_runner_plan_to_the_speculator(
    engine: Engine, mode: Any, method: str
) -> None:
    assert mode("enforce").active
    before = hooks.status().speculator_hooks
    groups, sizes = engine.runner_backend()
    sp = engine.speculator(method)
    engine.set_attn(sp, groups)
    assert sizes == [64]
    group = draft_group(sp)
    assert group.kernel_block_size == 64
    assert group.get_metadata_builder().kv_cache_spec.block_size == 64
    table = torch.tensor([[3, 0, 7], [1, 2, 0]], dtype=torch.int32)
    mapped = group.map_to_kernel_block_table(table)
    assert mapped.tolist() == [[6, 7, 0, 1, 14, 15], [2, 3, 4, 5, 0, 1]]
    assert hooks.status().speculator_hooks == before + 1


def test_enforce_leaves_an_agreeing_configuration_as_it_was(
    emulated_sm90: Any, monkeypatch: pytest.MonkeyPatch, mode: Any
) -> None:
    engine = build(emulated_sm90, 64, monkeypatch)

    def run() -> tuple[list[int], list[tuple[object, ...]]]:
        groups, sizes = engine.runner_backend()
        sp = engine.speculator()
        engine.set_attn(sp, groups)
        seen = [
            (
                g.backend,
                tuple(g.layer_names),
                g.kv_cache_spec,
                g.kv_cache_group_id,
                g.kernel_block_size,
                g.kernel_block_table,
                g.get_metadata_builder().kv_cache_spec,
            )
            for gs in sp.attn_groups
            for g in gs
        ]
        return sizes, seen

    plain = run()
    mode("enforce")
    hooked = run()
    assert plain == hooked
    assert plain[0] == [64]
    assert plain[1][0][4] is None  # no split: k == B for both


def test_strict_refuses_before_the_cache_is_bound(engine: Engine, mode: Any) -> None:
    mode("strict")
    groups, _ = engine.runner_backend()
    sp = engine.speculator()
    with pytest.raises(KernelBlockSizeMismatch) as info:
        engine.set_attn(sp, groups)
    err = info.value
    assert (err.group, err.block_size, err.expected, err.found) == (0, 128, 64, 128)
    assert err.component == "speculator EagleSpeculator"
    assert err.component_layers == [DRAFT]
    assert sorted(err.layers) == sorted([*TARGET, DRAFT])
    assert err.backends == ["FLASHINFER [16, 32, 64]", "TRITON_ATTN [MultipleOf(16)]"]
    text = str(err)
    for part in (
        "KV-cache group 0",
        "128-token blocks",
        "64-token kernel pages",
        "uses 128-token pages",
        "acceptance collapses",
        "KVCONFIG_MODE=enforce",
        "--block-size 64",
    ):
        assert part in text
    # strict fixes nothing: the speculator kept its own vote
    assert draft_group(sp).kernel_block_size is None


def test_warn_logs_and_starts(engine: Engine, mode: Any, kvlog: pytest.LogCaptureFixture) -> None:
    mode("warn")
    groups, _ = engine.runner_backend()
    sp = engine.speculator()
    engine.set_attn(sp, groups)
    assert effective(draft_group(sp)) == 128
    errors = [r.getMessage() for r in kvlog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1
    assert "uses 128-token pages" in errors[0] and "starting anyway" in errors[0]


def test_mismatch_survives_pickling(engine: Engine, mode: Any) -> None:
    mode("strict")
    groups, _ = engine.runner_backend()
    with pytest.raises(KernelBlockSizeMismatch) as info:
        engine.set_attn(engine.speculator(), groups)
    back = pickle.loads(pickle.dumps(info.value))
    assert type(back) is KernelBlockSizeMismatch
    assert str(back) == str(info.value)
    assert vars(back) == vars(info.value)
    assert isinstance(back, ValueError)


def test_session_logs_one_line_per_group_and_exports_the_plan(
    engine: Engine,
    mode: Any,
    kvlog: pytest.LogCaptureFixture,
    tmp_path: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from schemas.plan import Plan

    monkeypatch.setenv("KVCONFIG_PLAN_EXPORT", str(tmp_path / "plan-{rank}.json"))
    monkeypatch.setenv("RANK", "3")
    mode("enforce")
    runner = engine.runner()
    engine.initialize_kv_cache(runner, engine.speculator())
    lines = [r.getMessage() for r in kvlog.records if "group 0" in r.getMessage()]
    assert len(lines) == 1
    line = lines[0]
    assert "B=128 k=64 split=2" in line
    assert "FLASHINFER [16, 32, 64] target x4 k=64" in line
    assert "TRITON_ATTN [MultipleOf(16)] draft x1 k=64" in line
    assert "runner=64 speculator=64 (alone it would use 128) kvconfig=64" in line
    path = tmp_path / "plan-3.json"
    assert hooks.status().last_export == str(path)
    assert path.stat().st_mode & 0o777 == 0o644
    doc = json.loads(path.read_text())
    plan = Plan.model_validate(doc)
    assert plan.verdict == "ok" and plan.hooks == "enforce" and plan.runner == "v2"
    assert plan.speculative_method == "eagle3"
    (group,) = plan.groups
    assert (group.block_size, group.kernel_block_size, group.split) == (128, 64, 2)
    assert (group.components.runner, group.components.speculator) == (64, 64)
    assert sorted(group.layers.target) == sorted(TARGET) and group.layers.draft == [DRAFT]
    assert [f.code for f in plan.findings] == ["KV103"]
    assert plan.platform.capability == "9.0"


def test_warn_session_exports_a_rejected_plan(
    engine: Engine,
    mode: Any,
    tmp_path: Any,
    monkeypatch: pytest.MonkeyPatch,
    kvlog: pytest.LogCaptureFixture,
) -> None:
    from schemas.plan import Plan

    monkeypatch.setenv("KVCONFIG_PLAN_EXPORT", str(tmp_path / "plan.json"))
    mode("warn")
    engine.initialize_kv_cache(engine.runner(), engine.speculator())
    errors = [r for r in kvlog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1  # checked once, by the set_attn hook
    plan = Plan.model_validate_json((tmp_path / "plan.json").read_text())
    assert plan.verdict == "reject"
    assert (plan.groups[0].components.runner, plan.groups[0].components.speculator) == (64, 128)
    assert [f.code for f in plan.findings] == ["KV101"]


@pytest.mark.parametrize("name", ["enforce", "strict"])
def test_a_speculator_that_skips_the_hook_is_refused(engine: Engine, mode: Any, name: str) -> None:
    from vllm.v1.worker.gpu.spec_decode.eagle.speculator import EagleSpeculator
    from vllm.v1.worker.gpu.spec_decode.speculator import DraftModelSpeculator

    mode(name)
    vllm_set_attn = DraftModelSpeculator.set_attn.__kvconfig_original__  # type: ignore[attr-defined]

    class Bypassing(EagleSpeculator):  # overrides set_attn without calling super()
        def set_attn(self, *args: Any) -> None:
            vllm_set_attn(self, *args)

    sp = engine.speculator()
    sp.__class__ = Bypassing
    with pytest.raises(KernelBlockSizeMismatch) as info:
        engine.initialize_kv_cache(engine.runner(), sp)
    assert info.value.reason == "unverified"
    assert "without passing through kvconfig's hook" in str(info.value)


def test_strict_refuses_when_kvconfig_and_vllm_disagree(
    engine: Engine, mode: Any, monkeypatch: pytest.MonkeyPatch, kvlog: pytest.LogCaptureFixture
) -> None:
    """vLLM changed under kvconfig: its catalog votes 32 where the runner chose 64."""
    import dataclasses

    from kvconfig.mirror.catalog import load_catalog

    real = load_catalog("0.33.0")
    entry = real.by_class[FLASHINFER]
    narrower = entry._replace(rules=tuple(r._replace(sizes=(16, 32)) for r in entry.rules))
    changed = dataclasses.replace(real, by_class={**real.by_class, FLASHINFER: narrower})
    monkeypatch.setattr(_observe, "_catalog", lambda version: changed)

    mode("enforce")
    engine.initialize_kv_cache(engine.runner(), engine.speculator())
    errors = [r.getMessage() for r in kvlog.records if r.levelno == logging.ERROR]
    assert any("kvconfig's catalog votes 32, vLLM's model runner 64" in e for e in errors)

    mode("strict")
    groups, _ = engine.runner_backend()
    runner = engine.runner()
    with (
        pytest.raises(KernelBlockSizeMismatch) as info,
        _enforce.kv_cache_session(runner, "v2"),
    ):
        runner.attn_groups, runner.kernel_block_sizes = groups, [64]
    assert info.value.reason == "catalog"
    assert (info.value.expected, info.value.found) == (64, 32)


def test_unknown_backend_uses_its_own_sizes(
    engine: Engine, mode: Any, kvlog: pytest.LogCaptureFixture
) -> None:
    """An out-of-tree backend is voted with the sizes it declares, and the log says so."""
    triton = load(TRITON)

    class OutOfTree(triton):  # type: ignore[misc, valid-type]
        @staticmethod
        def get_supported_kernel_block_sizes(kv_cache_spec: Any = None) -> list[Any]:
            return [32]

    engine.config.compilation_config.static_forward_context[DRAFT] = make_layer(
        OutOfTree, 128, draft=True
    )
    mode("enforce")
    runner = engine.runner()
    engine.initialize_kv_cache(runner, engine.speculator())
    assert runner.kernel_block_sizes == [32]
    warnings = [r.getMessage() for r in kvlog.records if r.levelno == logging.WARNING]
    assert any("OutOfTree is unknown to kvconfig" in w and "[32]" in w for w in warnings)
    line = next(r.getMessage() for r in kvlog.records if "group 0" in r.getMessage())
    assert "runner=32" in line and "kvconfig=32" in line


def sized(base: type, sizes: list[int]) -> type:
    """An out-of-tree backend declaring exact ``sizes``."""

    class Sized(base):  # type: ignore[misc, valid-type]
        @staticmethod
        def get_supported_kernel_block_sizes(kv_cache_spec: Any = None) -> list[Any]:
            return list(sizes)

    return Sized


@pytest.mark.parametrize("name", ["strict", "enforce"])
def test_speculator_between_runner_and_block_size(engine: Engine, mode: Any, name: str) -> None:
    """Runner 32, speculator alone 64, B=128: vLLM 0.33.0 would stop later with a
    misleading "packed blocks" error; strict stops first, enforce fixes it."""
    fi, triton = load(FLASHINFER), load(TRITON)
    context = engine.config.compilation_config.static_forward_context
    for layer in TARGET:
        context[layer] = make_layer(sized(fi, [16, 32]), 128)
    context[DRAFT] = make_layer(sized(triton, [32, 64]), 128, draft=True)
    mode(name)
    groups, sizes = engine.runner_backend()
    assert sizes == [32]
    sp = engine.speculator()
    if name == "enforce":
        engine.set_attn(sp, groups)
        assert draft_group(sp).kernel_block_size == 32
        return
    with pytest.raises(KernelBlockSizeMismatch) as info:
        engine.set_attn(sp, groups)
    assert (info.value.expected, info.value.found) == (32, 64)
    assert "misleading error about packed blocks" in str(info.value)


def test_model_runner_v1_drafter_gets_the_runner_plan(engine: Engine, mode: Any) -> None:
    """V1 passes the runner's list to the drafter; the hooks verify it arrived."""
    from vllm.v1.spec_decode.eagle import EagleProposer

    mode("strict")
    groups, sizes = engine.runner_backend()

    def drafter(kernel_block_sizes: list[int] | None) -> Any:
        d = object.__new__(EagleProposer)
        d.vllm_config = engine.config
        d.device = CPU
        d._draft_attn_layer_names = {DRAFT}
        d.initialize_attn_backend(engine.kv_cache_config, kernel_block_sizes)
        return d

    def runner(d: Any) -> Any:
        return types.SimpleNamespace(
            kv_cache_config=engine.kv_cache_config,
            vllm_config=engine.config,
            attn_groups=groups,
            _kernel_block_sizes=sizes,
            drafter=d,
        )

    good = drafter(sizes)
    assert [g.kernel_block_size for g in good.draft_attn_groups] == [64]
    report = _observe.finish(_enforce.Session(runner(good), "v1"))
    assert report.plan.groups[0].speculator_k == 64

    with pytest.raises(KernelBlockSizeMismatch) as info:
        _observe.finish(_enforce.Session(runner(drafter(None)), "v1"))
    assert info.value.component == "Model Runner V1 drafter EagleProposer"
    assert (info.value.expected, info.value.found) == (64, 128)
