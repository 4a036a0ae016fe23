"""llm-d-benchmark scenarios (``kvconfig.load.llmd_benchmark``): the engines
``llmdbenchmark standup`` deploys, each rule on a small scenario of its own. Sources are
llm-d/llm-d-benchmark's ``llmdbenchmark/parser/render_plans.py`` (the merge),
``config/templates/values/defaults.yaml``, ``config/templates/jinja/13_ms-values.yaml.j2``
and ``_macros.j2`` (the rendering), read at commit 8bc9f1dd."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from kvconfig.errors import InputError, NoEngine
from kvconfig.load.documents import kind_of
from kvconfig.load.engines import engines_in
from kvconfig.load.operator_engine import Engine
from kvconfig.load.reading import reading_of


def _engines(text: str) -> list[Engine]:
    return engines_in(textwrap.dedent(text), "scenario.yaml")


def _read(text: str) -> dict[str, dict[str, Any]]:
    """Each engine's reading by name."""
    return {e.name: reading_of(e).to_json() for e in _engines(text)}


def _value(engine: Engine, option: str) -> str:
    return engine.argv[engine.argv.index(option) + 1]


def test_a_scenario_is_its_own_kind() -> None:
    """``RenderPlans.eval``: a ``scenario`` list of stacks, each with a ``name``."""
    assert kind_of({"scenario": [{"name": "a"}]}) == "llm-d-benchmark"
    assert kind_of({"scenario": [{"model": "x"}]}) is None


def test_the_defaults_alone() -> None:
    """``defaults.yaml`` under a stack that names only its model: one decode replica
    (``decode.enabled`` true, ``replicas`` 1; ``prefill.enabled`` false), the default
    command of ``build_vllm_command`` (the model ``model.cacheBase/model.path``, block
    size 64 from ``model.blockSize``, the ``vllmCommon.flags``: ``--enforce-eager``...),
    on ``$VLLM_METRICS_PORT`` behind the routing proxy."""
    (engine,) = _engines("""
        scenario:
          - name: one
            model: {name: org/m, path: models/org/m}
        """)
    r = reading_of(engine)
    assert engine.name == "decode/vllm"
    assert (r.role, r.replicas, r.block_size, r.tensor) == ("decode", 1, 64, 1)
    assert r.model == "/model-cache/models/org/m" and r.model_uri is None
    assert "--enforce-eager" in engine.argv and "--no-enable-log-requests" in engine.argv
    assert _value(engine, "--port") == "8200"
    assert engine.image == "docker.io/vllm/vllm-openai:v0.26.0"


def test_common_seeds_the_decode_and_prefill_sections() -> None:
    """``_expand_stack_common``: a ``common`` key the defaults' ``decode`` and
    ``prefill`` sections own (``parallelism``) is given to both where the stack leaves
    it, the rest merges into the root (``model``)."""
    got = _read("""
        scenario:
          - name: one
            common:
              model: {name: org/m, path: models/org/m, blockSize: 32}
              parallelism: {tensor: 4}
            prefill: {enabled: true, replicas: 1, parallelism: {tensor: 2}}
        """)
    assert (got["decode/vllm"]["tensor"], got["prefill/vllm"]["tensor"]) == (4, 2)
    assert got["decode/vllm"]["block_size"] == got["prefill/vllm"]["block_size"] == 32


def test_a_custom_command_with_the_values_in_it() -> None:
    """``build_vllm_command`` with ``vllm.customCommand``: the preprocess script, ``;``,
    the command trimmed; ``${accelerator.dtypeArgs}`` is the defaults' (the NVIDIA
    profile ``auto`` gives), ``$TP_SIZE`` the chart's from ``parallelism.tensor``,
    ``$VLLM_BLOCK_SIZE`` the env ``build_ms_env_vars`` sets from ``model.blockSize``."""
    (engine,) = _engines("""
        scenario:
          - name: one
            model: {name: org/m, path: models/org/m, blockSize: 128}
            decode:
              replicas: 3
              parallelism: {tensor: 2}
              vllm:
                customCommand: |
                  ${accelerator.runtimePreamble}
                  . /shared-config/llmdbench_env.sh
                  vllm serve /model-cache/$MODEL_PATH --served-model-name ${model.name} \\
                  --block-size $VLLM_BLOCK_SIZE --tensor-parallel-size $TP_SIZE \\
                  ${accelerator.dtypeArgs}
        """)
    r = reading_of(engine)
    assert (r.model, r.block_size, r.tensor, r.replicas) == ("/model-cache/models/org/m", 128, 2, 3)
    assert _value(engine, "--dtype") == "bfloat16"
    assert _value(engine, "--served-model-name") == "org/m"
    assert "--enforce-eager" not in engine.argv  # the flags are the default command's
    assert not [n for n in engine.notes if n.kind == "unknown-value"]


def test_a_prefill_section_is_created_by_enabled() -> None:
    """``13_ms-values.yaml.j2``: ``create`` is ``prefill.enabled`` (the defaults set it
    false, so replicas alone create nothing); enabled at the defaults' 0 replicas, the
    chart's Deployment is scaled to 0 (``prefill-deployment.yaml``)."""
    text = """
        scenario:
          - name: one
            model: {name: org/m, path: models/org/m}
            prefill: PREFILL
        """
    assert list(_read(text.replace("PREFILL", "{replicas: 2}"))) == ["decode/vllm"]
    got = _read(text.replace("PREFILL", "{enabled: true}"))
    assert (got["prefill/vllm"]["role"], got["prefill/vllm"]["replicas"]) == ("prefill", 0)
    port = [e for e in _engines(text.replace("PREFILL", "{enabled: true}")) if e.role == "prefill"]
    assert _value(port[0], "--port") == "8000"  # prefill: $VLLM_INFERENCE_PORT


def test_kv_transfer_and_modelservice_sections() -> None:
    """``vllmCommon.kvTransfer`` enabled adds ``--kv-transfer-config`` (connector, role,
    ``extraConfig`` as ``kv_connector_extra_config``: ``build_kv_transfer_config``); a
    section nested under ``modelservice`` is hoisted over the top-level one
    (``_hoist_modelservice_sections``)."""
    got = _read("""
        scenario:
          - name: one
            model: {name: org/m, path: models/org/m}
            vllmCommon:
              kvTransfer: {enabled: true, connector: OffloadingConnector,
                           extraConfig: {num_cpu_blocks: 100}}
            decode: {replicas: 1}
            modelservice:
              decode: {replicas: 4}
        """)
    r = got["decode/vllm"]
    assert (r["connector"], r["kv_role"], r["replicas"]) == ("OffloadingConnector", "kv_both", 4)


def test_every_stack_with_the_shared_block() -> None:
    """``_process_stack``: defaults, then ``shared``, then the stack (the stack wins),
    each stack its own engines."""
    got = _read("""
        shared:
          model: {blockSize: 16}
          decode: {replicas: 2}
        scenario:
          - name: a
            model: {name: org/a, path: models/org/a}
          - name: b
            model: {name: org/b, path: models/org/b, blockSize: 32}
            decode: {replicas: 1}
        """)
    assert {k: (v["model"], v["block_size"], v["replicas"]) for k, v in got.items()} == {
        "a/decode/vllm": ("/model-cache/models/org/a", 16, 2),
        "b/decode/vllm": ("/model-cache/models/org/b", 32, 1),
    }


def test_variants_are_split_by_the_environment_file() -> None:
    """``build_ms_env_vars`` joins ``vllmVariants`` with ``,,``; the preprocess script
    (``set_llmdbench_environment.py``, run by an init container) re-exports such a
    variable as its first part in a pod outside a LeaderWorkerSet, in the
    ``llmdbench_env.sh`` the command sources."""
    (engine,) = _engines("""
        scenario:
          - name: one
            model: {name: org/m, path: models/org/m}
            vllmCommon:
              preprocessScript: . /shared-config/llmdbench_env.sh
            decode:
              vllmVariants: [{maxModelLen: 2048}, {maxModelLen: 1024}]
        """)
    assert _value(engine, "--max-model-len") == "2048"
    assert engine.env["VLLM_MAX_MODEL_LEN"] == "2048"  # what vLLM runs with


@pytest.mark.parametrize(
    ("section", "said"),
    [
        ("kustomize: {enabled: true, guideName: g}", "upstream llm-d guide g"),
        ("nok8s: {enabled: true}", "nok8s"),
        ("standalone: {enabled: true}", "standalone method"),
        ("modelservice: {enabled: false}\n    fma: {enabled: true}", "Fast Model Actuation"),
        ("accelerator: {profile: intel-xpu}", "overlay"),
        ("decode: {enabled: false}", "neither a decode nor a prefill"),
    ],
)
def test_what_is_not_read(section: str, said: str) -> None:
    """The deploy method (``_resolve_deploy_methods``: nok8s, kustomize, standalone, then
    modelservice) and an accelerator overlay: only the modelservice method on the
    NVIDIA profile is read; the others start no engine kvconfig reads, and say why."""
    text = f"scenario:\n  - name: one\n    {section}\n"
    with pytest.raises(NoEngine, match=said):
        engines_in(text, "scenario.yaml")


def test_a_leader_worker_set_leaves_the_leader_address_to_run_time() -> None:
    """``multinode.enabled``: the chart's LeaderWorkerSet of ``parallelism.workers``
    pods; its controller gives ``LWS_GROUP_SIZE`` and the leader's address (unknown)."""
    (engine,) = _engines("""
        scenario:
          - name: one
            model: {name: org/m, path: models/org/m}
            multinode: {enabled: true}
            decode:
              parallelism: {tensor: 1, data: 1, dataLocal: 4, workers: 2}
              vllm:
                customCommand: >-
                  vllm serve /model-cache/$MODEL_PATH --data-parallel-size
                  $((LWS_GROUP_SIZE * DP_SIZE_LOCAL)) --data-parallel-address ${LWS_LEADER_ADDRESS}
        """)
    assert reading_of(engine).data == 8
    assert any("LWS_LEADER_ADDRESS" in n.message for n in engine.notes)


def test_a_section_that_is_no_mapping_is_bad_input() -> None:
    """The templates read ``model``, ``decode``, ``vllmCommon``... as mappings (Jinja's
    attribute access); a scalar there renders no command: bad input, at its key."""
    with pytest.raises(InputError, match="model: expected a mapping") as err:
        engines_in("scenario:\n  - name: one\n    model: 5\n", "scenario.yaml")
    assert not isinstance(err.value, NoEngine) and err.value.line == 3
