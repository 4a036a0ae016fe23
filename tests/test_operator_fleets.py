"""Fleets from operator files read with the loader `kvconfig lint` uses, and one model of
an engine for every command."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from kvconfig.cli.commands import main
from kvconfig.errors import NoEngine

CORPUS = Path(__file__).parent / "realworld" / "files"
QWEN3_8B = Path(__file__).parent.parent / "examples" / "models" / "qwen3-8b"
GPT_OSS = Path(__file__).parent.parent / "examples" / "models" / "gpt-oss-120b"


def _run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(argv), stdout=out)
    return code, out.getvalue()


def test_fleet_of_an_operator_file_takes_model_path_and_platform() -> None:
    # AIBrix StormService: 4 prefill and 3 decode pods with the same command (kv_both)
    path = CORPUS / "vllm-project/aibrix/samples/disaggregation/vllm/pool.yaml"
    code, text = _run(
        "lint", "--fleet", "--format", "json", "--platform", "H100",
        "--model-path", f"/models/Qwen3-8B={QWEN3_8B}", str(path),
    )  # fmt: skip
    assert code == 0, text
    doc = json.loads(text)
    got = sorted((e["name"], e["role"], e["replicas"], e["platform"]) for e in doc["engines"])
    assert got == [
        ("StormService/vllm-pool-xpyd/roles.0/prefill", "prefill", 4, "H100"),
        ("StormService/vllm-pool-xpyd/roles.1/decode", "decode", 3, "H100"),
    ]
    # the engine keeps its file and line, not a pasted <command>
    assert all(str(path) in e["source"] for e in doc["engines"])


def test_same_words_do_not_collapse() -> None:
    # a Dynamo prefill and decode worker whose vLLM words are the same (kv_both)
    path = (
        CORPUS / "vllm-project/aibrix/brixbench/benchmark/testdata/deployments/dynamo/"
        "qwen3-8b-round-robin-1p1d-tp2-vke.yaml"
    )
    code, text = _run(
        "lint", "--fleet", "--format", "json", "--platform", "H100",
        "--model-path", f"/models/Qwen3-8B={QWEN3_8B}", str(path),
    )  # fmt: skip
    assert code == 0, text
    roles = sorted(e["role"] for e in json.loads(text)["engines"])
    assert roles == ["decode", "prefill"]


def _groups(doc: dict[str, object]) -> int:
    plan = doc.get("plan", doc)
    assert isinstance(plan, dict)
    groups = plan["groups"]
    assert isinstance(groups, list)
    return len(groups)


def test_connector_without_hma_gives_one_plan_everywhere(tmp_path: Path) -> None:
    """vLLM turns the hybrid KV-cache manager off for a connector that does not support
    HMA (LMCacheConnectorV1): `plan` and `lint --fleet` give gpt-oss the same groups."""
    kv = '{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}'
    words = ["vllm", "serve", str(GPT_OSS), "--kv-transfer-config", kv]
    code, text = _run("plan", "--platform", "H200", "--format", "json", "--", *words)
    assert code == 0, text
    single = _groups(json.loads(text))
    code, text = _run("lint", "--fleet", "--format", "json", "--platform", "H200", "--", *words)
    assert code in (0, 1), text
    (engine,) = json.loads(text)["engines"]
    assert single == _groups(engine) == 1
    code, text = _run("plan", "--platform", "H200", "--format", "json", "--", *words[:3])
    assert _groups(json.loads(text)) == 2  # with HMA: sliding window and full attention


def test_lint_shows_what_was_read() -> None:
    path = (
        CORPUS / "vllm-project/aibrix/brixbench/benchmark/testdata/deployments/llmd/models/"
        "qwen3-8b-pd-4p4d-singlenode.yaml"
    )
    args = ["--platform", "H100", "--model-path", f"/models/Qwen3-8B={QWEN3_8B}", str(path)]
    code, text = _run("lint", *args)
    assert code == 0, text
    read = [line.strip() for line in text.splitlines() if line.startswith("  read: ")]
    assert read == [
        "read: /models/Qwen3-8B tp=1 block=128 NixlConnector (kv_both) prefill x4; "
        "planned for vLLM 0.33.0",
        "read: /models/Qwen3-8B tp=1 block=128 NixlConnector (kv_both) decode x4; "
        "planned for vLLM 0.33.0",
    ]
    code, text = _run("lint", "--format", "json", *args)
    readings = [d["operator_engine"]["reading"] for d in json.loads(text)]
    assert [(r["role"], r["block_size"], r["connector"], r["replicas"]) for r in readings] == [
        ("prefill", 128, "NixlConnector", 4),
        ("decode", 128, "NixlConnector", 4),
    ]


LWS = """apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: wide-ep}
spec:
  leaderWorkerTemplate:
    size: 2
    leaderTemplate:
      spec:
        containers:
        - name: vllm
          image: vllm/vllm-openai:v0.33.0
          command: [vllm, serve]
          args: [Qwen/Qwen3-8B, --data-parallel-size, "$(LWS_GROUP_SIZE)",
                 --data-parallel-address, $(LWS_LEADER_ADDRESS)]
    workerTemplate:
      spec:
        containers:
        - name: vllm
          image: vllm/vllm-openai:v0.33.0
          command: [sh, -c]
          args: ["vllm serve Qwen/Qwen3-8B --headless --data-parallel-address
                  $(LWS_LEADER_ADDRESS) --data-parallel-start-rank $LWS_WORKER_INDEX"]
"""


def test_leaderworkerset_variables_are_set_at_run_time() -> None:
    """LeaderWorkerSet adds LWS_GROUP_SIZE (the size), LWS_WORKER_INDEX and
    LWS_LEADER_ADDRESS to every container: known or known at run time, never undefined."""
    from kvconfig.load.engines import engines_in

    (leader,) = engines_in(LWS, "<lws>")  # the --headless worker is part of the leader's
    # engine: the worker template alone is the pods of every index, the leader's included
    head, _, rest = LWS.partition("    leaderTemplate:")
    workers_only = head + "    workerTemplate:" + rest.partition("    workerTemplate:")[2]
    (worker,) = engines_in(workers_only, "<lws>")
    assert leader.argv[2] == "2"
    assert leader.env_unknown == ("LWS_LEADER_ADDRESS",)
    # the address the controller gives, given with --env, as for a valueFrom variable
    (given,) = engines_in(LWS, "<lws>", env={"LWS_LEADER_ADDRESS": "10.0.0.1"})
    assert (given.argv[-1], given.env_unknown) == ("10.0.0.1", ())
    assert set(worker.env_unknown) == {"LWS_LEADER_ADDRESS", "LWS_WORKER_INDEX"}
    assert all(
        n.kind == "unknown-value" for n in (*leader.notes, *worker.notes) if "LWS" in n.message
    )


def test_skypilot_accelerator_set_without_spaces() -> None:
    """SkyPilot's examples write {H100:8, H200:8}: YAML keys without values."""
    from kvconfig.load.engines import engines_in

    task = (
        "resources:\n  accelerators: {H100:8, H200:8}\nrun: |\n"
        "  vllm serve Qwen/Qwen3-8B --tensor-parallel-size $SKYPILOT_NUM_GPUS_PER_NODE\n"
    )
    (engine,) = engines_in(task, "<sky>")
    assert engine.argv[-1] == "8"
    assert engine.platforms == ("H100", "H200")


def test_skypilot_alternatives_with_other_counts_are_one_engine_each() -> None:
    """SkyPilot launches on one alternative and sets SKYPILOT_NUM_GPUS_PER_NODE to its
    count (a count left out is 1: docs/source/compute/gpus.rst): one engine per count,
    each with its GPUs, none left with a run-time tensor parallelism."""
    from kvconfig.load.engines import engines_in

    task = (
        "name: t\nresources:\n  accelerators: {A100:4, A100-80GB:8, H100:8, L4}\nrun: |\n"
        "  vllm serve Qwen/Qwen3-8B --tensor-parallel-size $SKYPILOT_NUM_GPUS_PER_NODE\n"
    )
    got = {e.name: (e.argv[-1], e.platforms) for e in engines_in(task, "<sky>")}
    assert got == {
        "skypilot/t (4 GPUs)": ("4", ("A100",)),
        "skypilot/t (8 GPUs)": ("8", ("A100", "H100")),
        "skypilot/t (1 GPU)": ("1", ("L4",)),
    }


def test_a_skypilot_run_script_s_dynamo_frontend_is_a_router(tmp_path: Path) -> None:
    """The node of rank 0 starts a KV-routing Dynamo frontend beside the worker: a router
    of the fleet, its block size from the task's envs (KV711 against 64-token workers),
    and one from ``--env`` as ``sky launch --env`` sets it."""
    from kvconfig.load.routers import routers_in_file

    task = (
        "name: t\nnum_nodes: 2\nresources:\n  accelerators: H100:8\n"
        "envs:\n  KV_BLOCK: 16\nrun: |\n"
        '  if [ "$SKYPILOT_NODE_RANK" = 0 ]; then\n'
        "    python -m dynamo.frontend --router-mode kv --kv-cache-block-size $KV_BLOCK &\n"
        "  fi\n"
        "  vllm serve Qwen/Qwen3-8B --block-size 64 -tp $SKYPILOT_NUM_GPUS_PER_NODE\n"
    )
    (router,) = routers_in_file(task, "t.sky.yaml")
    assert router.name == "skypilot/t/dynamo.frontend" and router.block_size == 16
    (given,) = routers_in_file(task, "t.sky.yaml", {"KV_BLOCK": "64"})
    assert given.block_size == 64
    path = tmp_path / "t.sky.yaml"
    path.write_text(task)
    code, text = _run(
        "lint", "--fleet", "--format", "json", "--model-path", f"Qwen/Qwen3-8B={QWEN3_8B}",
        str(path),
    )  # fmt: skip
    assert code == 1 and "KV711" in {f["code"] for f in json.loads(text)["findings"]}


DGD = """apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata: {name: kv}
spec:
  services:
    Frontend:
      componentType: frontend
      extraPodSpec:
        mainContainer:
          image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:my-tag
          command: [python3, -m, dynamo.frontend]
          args: [--router-mode, kv, --kv-cache-block-size, "ROUTER"]
    VllmWorker:
      componentType: worker
      replicas: 2
      extraPodSpec:
        mainContainer:
          image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:my-tag
          command: [python3, -m, dynamo.vllm]
          args: [--model, Qwen/Qwen3-8B, --block-size, "64"]
"""


def test_dynamo_frontend_beside_its_workers(tmp_path: Path) -> None:
    """A Dynamo frontend routing on KV blocks of 16 tokens in front of 64-token workers is
    a fleet finding (KV711); at 64 it agrees."""
    codes = {}
    for size in ("16", "64"):
        path = tmp_path / f"dgd-{size}.yaml"
        path.write_text(DGD.replace("ROUTER", size))
        code, text = _run(
            "lint", "--fleet", "--format", "json", "--platform", "H100",
            "--model-path", f"Qwen/Qwen3-8B={QWEN3_8B}", str(path),
        )  # fmt: skip
        doc = json.loads(text)
        codes[size] = (code, sorted({f["code"] for f in doc["findings"]}))
    assert codes["16"][0] == 1 and "KV711" in codes["16"][1]
    assert codes["64"] == (0, [])


def _graph(router: int, prefill: int, decode: int, connector: str) -> str:
    """A Dynamo graph: a KV-routing frontend at ``router`` tokens, a prefill and a decode
    worker with explicit block sizes and ``connector``, serving a model not cached here."""

    def worker(name: str, role: str, block: int) -> str:
        kv = json.dumps({"kv_connector": connector, "kv_role": "kv_both"})
        return f"""    {name}:
      componentType: worker
      subComponentType: {role}
      extraPodSpec:
        mainContainer:
          image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.1.1
          command: [python3, -m, dynamo.vllm]
          args: [--model, example-org/not-cached, --block-size, "{block}",
                 --disaggregation-mode, {role}, --kv-transfer-config, '{kv}']
"""

    return f"""apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata: {{name: g}}
spec:
  services:
    Frontend:
      componentType: frontend
      extraPodSpec:
        mainContainer:
          command: [python3, -m, dynamo.frontend, --router-mode, kv,
                    --kv-cache-block-size, "{router}"]
{worker("Prefill", "prefill", prefill)}{worker("Decode", "decode", decode)}"""


def test_unplanned_engines_still_meet_the_checks_that_need_no_model(tmp_path: Path) -> None:
    """Engines whose model is not here are "cannot tell" (KV402) but keep their pair, their
    router and the checks that need only what the file says."""
    cases = [
        # (router, prefill, decode, connector) -> codes beyond KV402
        ((16, 16, 16, "NixlConnector"), []),
        ((64, 16, 16, "NixlConnector"), ["KV711", "KV711"]),
        ((16, 16, 32, "MooncakeConnector"), ["KV710", "KV711"]),
        ((48, 48, 64, "NixlConnector"), ["KV703", "KV711"]),
        ((32, 32, 64, "NixlConnector"), ["KV711"]),  # 64 is a multiple of 32: NIXL adapts
    ]
    for (router, prefill, decode, connector), want in cases:
        path = tmp_path / "graph.yaml"
        path.write_text(_graph(router, prefill, decode, connector))
        code, text = _run("lint", "--fleet", "--format", "json", "--platform", "H100", str(path))
        doc = json.loads(text)
        codes = sorted(f["code"] for f in doc["findings"] if f["code"] != "KV402")
        assert codes == want, (router, prefill, decode, connector, doc["findings"])
        assert code == (1 if want else 0)
        assert doc["verdict"] == ("reject" if want else "unknown")
        assert [u["code"] for u in doc["unplanned"]] == ["KV402", "KV402"]
        assert sorted((u["role"], u["block_size"]) for u in doc["unplanned"]) == [
            ("decode", decode),
            ("prefill", prefill),
        ]
        assert [(p["prefill"], p["decode"]) for p in doc["pairs"]] == [
            ("DynamoGraphDeployment/g/Prefill/main", "DynamoGraphDeployment/g/Decode/main")
        ]
        assert (doc["router"]["kind"], doc["router"]["block_size"]) == ("dynamo", router)


def test_unplanned_engines_show_in_text_and_html(tmp_path: Path) -> None:
    """The report shows what was read of an engine it did not plan, and the pairs."""
    path = tmp_path / "graph.yaml"
    path.write_text(_graph(16, 16, 32, "NixlConnector"))
    _, text = _run("lint", "--fleet", "--platform", "H100", str(path))
    assert "Decode/main (decode): " in text and "block 32, NixlConnector (kv_both)" in text
    assert "not planned (KV402)" in text
    assert "pairs (prefill -> decode): DynamoGraphDeployment/g/Prefill/main -> " in text
    _, page = _run("lint", "--fleet", "--format", "html", "--platform", "H100", str(path))
    assert 'data-kv="unplanned"' in page and "<td>example-org/not-cached</td>" in page
    assert page.count("<td>KV402</td>") == 2


def test_a_server_vllm_refuses_is_left_out_of_the_fleet(tmp_path: Path) -> None:
    """A script that starts two servers, one with an option vLLM's parser refuses: that
    one exits with status 2 and never starts, so the fleet is the other (planned) and a
    KV812 error says why; when no server starts the file is bad input, as for lint."""
    script = tmp_path / "two.sh"
    good = f"vllm serve {QWEN3_8B} --port 8100 --block-size 32 &"
    bad = f"vllm serve {QWEN3_8B} --port 8200 --zmq-server-port 5555 &"
    script.write_text(f"#!/bin/bash\n{good}\n{bad}\nwait\n")
    code, text = _run("lint", "--fleet", "--format", "json", "--platform", "H100", str(script))
    doc = json.loads(text)
    assert code == 1 and doc["verdict"] == "reject"
    assert [e["name"] for e in doc["engines"]] == ["two.sh#1"]
    (refused,) = [f for f in doc["findings"] if f["code"] == "KV812"]
    assert refused["engines"] == ["two.sh#2"] and "--zmq-server-port" in refused["message"]
    script.write_text(f"#!/bin/bash\n{bad}\n{bad.replace('8200', '8300')}\nwait\n")
    code, _ = _run("lint", "--fleet", "--platform", "H100", str(script))
    assert code == 2


def test_a_server_skypilot_setup_leaves_running_is_the_task_s_engine() -> None:
    """SkyPilot runs ``setup`` then ``run`` on the same nodes: a server ``setup`` starts
    detached in the background serves the task when ``run`` starts none."""
    from kvconfig.load.engines import engines_in

    task = (
        "envs:\n  MODEL: Qwen/Qwen3-8B\nresources:\n  accelerators: L4\nsetup: |\n"
        '  setsid bash -c "vllm serve $MODEL --block-size 32 > vllm.log 2>&1" &\n'
        "run: |\n  python client.py\n"
    )
    (engine,) = engines_in(task, "<sky>")
    assert engine.argv[:3] == ("Qwen/Qwen3-8B", "--block-size", "32")
    with pytest.raises(NoEngine, match="the run script starts no 'vllm serve'"):
        engines_in(task.replace("vllm serve", "echo"), "<sky>")
