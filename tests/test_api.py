"""The public Python API: its names, its errors, its finding codes.

* ``kvconfig.__all__`` is the API; every name in it resolves, and nothing private is
  exported.
* Every exception kvconfig defines lives in ``kvconfig/errors.py``, derives from
  ``KVConfigError`` and survives pickling (vLLM re-raises errors across processes).
* The finding codes are a public enum, and docs/findings.md lists exactly its codes.
* ``kvconfig.load_deployment`` takes every option the CLI has.
"""

from __future__ import annotations

import importlib
import inspect
import pickle
import pkgutil
import re
from pathlib import Path
from typing import Any

import pytest

import kvconfig
from kvconfig import errors
from kvconfig.codes import FindingCode, Severity

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("kvconfig",)


def _modules() -> list[Any]:
    found = []
    for name in PACKAGES:
        package = importlib.import_module(name)
        found.append(package)
        for info in pkgutil.walk_packages(package.__path__, prefix=f"{name}."):
            if info.name.endswith("__main__"):
                continue
            found.append(importlib.import_module(info.name))
    return found


def _defined_exceptions() -> list[type[BaseException]]:
    out = []
    for module in _modules():
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, BaseException)
                and value.__module__ == module.__name__
            ):
                out.append(value)
    return out


def test_every_exception_lives_in_errors_and_derives_from_the_base() -> None:
    found = _defined_exceptions()
    assert found
    elsewhere = [
        f"{e.__module__}.{e.__qualname__}"
        for e in found
        if e.__module__ != errors.__name__ and not e.__module__.startswith(f"{errors.__name__}.")
    ]
    assert not elsewhere, elsewhere
    rogue = [e.__qualname__ for e in found if not issubclass(e, errors.KVConfigError)]
    assert not rogue, rogue


MISMATCH = {
    "group": 0,
    "layers": ["l0"],
    "backends": ["A [64]"],
    "block_size": 128,
    "expected": 64,
    "found": 128,
}

SAMPLES: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {
    "KVConfigError": (("boom",), {}),
    "MachineryError": (("kvconfig cannot find make_arg_parser",), {}),
    "InputError": (("bad",), {"source": "f.yaml", "line": 3, "key": "k", "hint": "h"}),
    "ModelUnavailable": (("not cached",), {"source": "f.yaml", "key": "model", "hint": "h"}),
    "DuplicateKey": (("duplicate key 'kind'",), {"source": "f.yaml", "line": 3}),
    "NoEngine": (("no vLLM container found",), {"source": "f.yaml", "hint": "h"}),
    "UnsupportedArchitecture": (("XForCausalLM", "m/config.json", "kvconfig: 1"), {}),
    "RunTimeValue": (
        ("$BS", "--block-size"),
        {"engine": "Deployment/d/vllm", "source": "d.yaml", "line": 9, "fixes": ["f"]},
    ),
    "DeploymentError": (("two", ("layers", 0), "fix"), {}),
    "NoCommonBlockSize": ((["A", "B"],), {}),
    "ScriptStops": (("exit",), {}),
    "ProgramUnread": ((), {}),
    "AnyVariable": ((), {}),
    "NotCliTemplate": ((), {}),
    "ScriptJumps": (("break", 1), {}),
    "AlignedBlockSizeUnsupported": ((96, ["A"]), {}),
    "GroupingError": (("cannot group",), {}),
    "NoCommonKernelBlockSize": ((128, [("A", "[64]")]), {}),
    "ConnectorRefusal": (("AssertionError", "Local block size 64 is not divisible"), {}),
    "HandshakeChecked": (("checked",), {}),
    "HooksFailed": (
        (),
        {"what": "installing the patches", "unchecked": "the speculator", "error": "E: x"},
    ),
    "HandshakeRefused": (
        (),
        {
            "local_engine": "a",
            "remote_engine": "b",
            "local_plan": {"block_size": 128},
            "remote_plan": {"block_size": 64},
            "check": "page sizes",
        },
    ),
    "ConnectorBlockSizeMismatch": ((), MISMATCH),
    "KernelBlockSizeMismatch": ((), MISMATCH),
}


def test_every_error_survives_pickling() -> None:
    classes = {e.__name__: e for e in _defined_exceptions()}
    assert set(classes) == set(SAMPLES), set(classes) ^ set(SAMPLES)
    for name, cls in classes.items():
        args, kwargs = SAMPLES[name]
        err = cls(*args, **kwargs)
        back = pickle.loads(pickle.dumps(err))
        assert type(back) is cls and str(back) == str(err) and vars(back) == vars(err), name
        assert isinstance(back, errors.KVConfigError) and isinstance(back, ValueError)


def test_the_public_names_resolve_and_are_public() -> None:
    for name in kvconfig.__all__:
        value = getattr(kvconfig, name)
        module = getattr(value, "__module__", "kvconfig")
        assert not any(part.startswith("_") for part in module.split(".")), (name, module)
    assert "plan_result" not in kvconfig.__all__
    assert not hasattr(kvconfig, "plan_result")
    assert kvconfig.UnsupportedArchitecture is errors.UnsupportedArchitecture
    assert kvconfig.FindingCode is FindingCode and kvconfig.Severity is Severity


def _documented_rows() -> list[tuple[str, str, str]]:
    text = (ROOT / "docs" / "findings.md").read_text(encoding="utf-8")
    row = re.compile(
        r'^\| <a id="(kv\d+)"></a>(KV\d+) \| ([a-z-]+) \| (error|warning|info) \|', re.M
    )
    rows = []
    for anchor, code, slug, severity in row.findall(text):
        assert anchor == code.lower()
        rows.append((code, slug, severity))
    return rows


def test_docs_list_exactly_the_finding_codes() -> None:
    assert _documented_rows() == [(c.value, c.slug, c.severity.value) for c in FindingCode]


def test_finding_codes_are_stable_strings() -> None:
    codes = [c.value for c in FindingCode]
    assert codes == sorted(codes) and len(set(codes)) == len(codes)
    assert all(re.fullmatch(r"KV\d{3}", c) for c in codes)
    assert FindingCode("KV101") is FindingCode.COMPONENT_MISMATCH
    assert FindingCode.COMPONENT_MISMATCH == "KV101"
    assert len({c.slug for c in FindingCode}) == len(codes)
    assert all(isinstance(c.severity, Severity) and c.summary for c in FindingCode)


def test_load_deployment_takes_every_option_the_cli_has() -> None:
    from kvconfig.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    lint = sub.choices["lint"]  # type: ignore[attr-defined]
    options = {a.dest for a in lint._actions if a.option_strings and a.dest != "help"}
    # how to print, which planner runs and the fleet command: not what the deployment is
    options -= {
        "format",
        "engine",
        "jobs",
        "engine_timeout",
        "vllm_python",
        "fleet",
        "trust_remote_code",
    }
    params = set(inspect.signature(kvconfig.load_deployment).parameters)
    assert options <= params, options - params


def test_load_deployment_passes_trtllm_cubins_on() -> None:
    path = ROOT / "examples" / "qwen3-8b-eagle3-gh200-triton-128.yaml"
    with_cubins = kvconfig.load_deployment(path, platform="b200")
    without = kvconfig.load_deployment(path, platform="b200", trtllm_cubins=False)
    assert with_cubins.trtllm_cubins is True and without.trtllm_cubins is False
    assert kvconfig.resolve(with_cubins).verdict == "ok"
    assert kvconfig.resolve(without).verdict == "reject"


@pytest.mark.parametrize("code", list(FindingCode), ids=lambda c: c.value)
def test_explain_prints_each_code(code: FindingCode) -> None:
    import io

    from kvconfig.cli import main

    out = io.StringIO()
    assert main(["explain", code.value], stdout=out) == 0
    assert out.getvalue().startswith(f"{code.value} {code.slug} ({code.severity.value}): ")
