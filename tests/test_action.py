"""The GitHub Action (``action.yml``) runs as GitHub would run it, with GitHub's
variables and files simulated.

``Runner`` plays the composite action: it reads ``action.yml``, evaluates each step's
``if:`` and the ``${{ }}`` expressions of its ``env:`` and ``with:`` (inputs, the steps'
outputs, ``always()``), runs each ``run:`` step with real ``bash`` in a workspace with
``GITHUB_WORKSPACE``, ``GITHUB_OUTPUT``, ``GITHUB_STEP_SUMMARY``, ``GITHUB_ACTION_PATH``
and ``RUNNER_TEMP``, reads the outputs back as GitHub does, and records the ``uses:``
steps (the SARIF upload) with their evaluated inputs. The install step is the one step it
does not run (it creates a virtualenv and pip-installs the checkout: tests/test_packaging
installs the built wheel into a clean virtualenv); its output is this environment's
Python, with the checkout on PYTHONPATH.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from kvconfig.cli import action

ROOT = Path(__file__).resolve().parents[1]
ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
STEPS: list[dict[str, Any]] = ACTION["runs"]["steps"]

Value = str | bool


class Expr:
    """GitHub's expression syntax, the part action.yml uses: ``inputs.X``,
    ``steps.ID.outputs.X``, ``'text'``, ``==``, ``!=``, ``&&``, ``||``, ``always()``."""

    TOKEN = re.compile(r"\s*(always\(\)|&&|\|\||==|!=|'[^']*'|[A-Za-z_][\w.-]*)")

    def __init__(self, text: str, context: dict[str, str]) -> None:
        self.tokens: list[str] = []
        pos = 0
        text = text.strip()
        while pos < len(text):
            m = self.TOKEN.match(text, pos)
            assert m, f"expression not understood at {text[pos:]!r}"
            self.tokens.append(m.group(1))
            pos = m.end()
        self.context = context

    def value(self) -> Value:
        out = self._or()
        assert not self.tokens, self.tokens
        return out

    def _or(self) -> Value:
        left = self._and()
        while self.tokens[:1] == ["||"]:
            self.tokens.pop(0)
            right = self._and()
            left = left if truthy(left) else right
        return left

    def _and(self) -> Value:
        left = self._cmp()
        while self.tokens[:1] == ["&&"]:
            self.tokens.pop(0)
            right = self._cmp()
            left = right if truthy(left) else left
        return left

    def _cmp(self) -> Value:
        left = self._atom()
        if self.tokens[:1] in (["=="], ["!="]):
            op = self.tokens.pop(0)
            right = self._atom()
            same = str(left).lower() == str(right).lower()
            return same if op == "==" else not same
        return left

    def _atom(self) -> Value:
        tok = self.tokens.pop(0)
        if tok == "always()":
            return True
        if tok.startswith("'"):
            return tok[1:-1]
        assert tok.startswith(("inputs.", "steps.", "runner.", "github.")), tok
        return self.context.get(tok, "")


def truthy(v: Value) -> bool:
    return v if isinstance(v, bool) else v != ""


def substitute(text: str, context: dict[str, str]) -> str:
    def one(m: re.Match[str]) -> str:
        v = Expr(m.group(1), context).value()
        return ("true" if v else "false") if isinstance(v, bool) else v

    return re.sub(r"\$\{\{(.*?)\}\}", one, text)


def read_outputs(path: Path) -> dict[str, str]:
    """GITHUB_OUTPUT as GitHub reads it: ``name=value`` lines and ``name<<EOF`` blocks."""
    out: dict[str, str] = {}
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, end = line.split("<<", 1)
            j = lines.index(end, i + 1)
            out[name] = "\n".join(lines[i + 1 : j])
            i = j + 1
            continue
        name, _, value = line.partition("=")
        out[name] = value
        i += 1
    return out


@dataclass
class Job:
    """What running the action did."""

    code: int
    """The job's exit code (the first failing step's)."""
    log: str
    """Every run step's standard output and error."""
    outputs: dict[str, dict[str, str]] = field(default_factory=dict)
    uploads: list[dict[str, str]] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)
    summary: str = ""


def run_action(tmp: Path, workspace: Path, inputs: dict[str, str]) -> Job:
    runner_temp = tmp / "runner-temp"
    runner_temp.mkdir(exist_ok=True)
    context = {f"inputs.{k}": str(v.get("default", "")) for k, v in ACTION["inputs"].items()}
    unknown = set(inputs) - set(ACTION["inputs"])
    assert not unknown, unknown
    context.update({f"inputs.{k}": v for k, v in inputs.items()})
    context["steps.install.outputs.python"] = sys.executable
    summary = tmp / "step-summary.md"
    job = Job(0, "")
    failed = False
    for step in STEPS:
        cond = step.get("if", "success()" if not failed else "")
        cond = cond.strip().removeprefix("${{").removesuffix("}}")
        if cond == "success()":
            go = not failed
        else:
            go = truthy(Expr(cond, context).value()) and (not failed or "always()" in cond)
        if not go:
            continue
        job.ran.append(step["name"])
        if step.get("id") == "install":
            continue
        if "uses" in step:
            job.uploads.append(
                {
                    "uses": step["uses"],
                    **{k: substitute(str(v), context) for k, v in step["with"].items()},
                }
            )
            continue
        assert "${{" not in step["run"], f"{step['name']}: expressions belong in env:"
        output = tmp / f"output-{step.get('id', len(job.ran))}"
        env = {
            "PATH": os.environ["PATH"],
            "HOME": os.environ.get("HOME", str(tmp)),
            "PYTHONPATH": str(ROOT),
            "CI": "true",
            "GITHUB_ACTIONS": "true",
            "GITHUB_WORKSPACE": str(workspace),
            "GITHUB_ACTION_PATH": str(ROOT),
            "GITHUB_OUTPUT": str(output),
            "GITHUB_STEP_SUMMARY": str(summary),
            "RUNNER_TEMP": str(runner_temp),
            **{k: substitute(str(v), context) for k, v in step.get("env", {}).items()},
        }
        proc = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
            cwd=workspace,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        job.log += proc.stdout + proc.stderr
        values = read_outputs(output)
        if "id" in step:
            job.outputs[step["id"]] = values
            context.update({f"steps.{step['id']}.outputs.{k}": v for k, v in values.items()})
        if proc.returncode != 0 and not failed:
            failed, job.code = True, proc.returncode
    job.summary = summary.read_text(encoding="utf-8") if summary.exists() else ""
    return job


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "deploy").mkdir(parents=True)
    for name in ("qwen3-8b-eagle3-gh200-triton-128.yaml", "qwen3-8b-eagle3-gh200-triton-64.yaml"):
        shutil.copy(ROOT / "examples" / name, ws / "deploy" / name)
    shutil.copytree(ROOT / "examples" / "models", ws / "deploy" / "models")
    (ws / "k8s").mkdir()
    shutil.copy(ROOT / "examples" / "operators" / "pd-decode-prefill-manifest.yaml", ws / "k8s")
    return ws


def test_a_rejected_deployment_annotates_uploads_sarif_and_fails(
    tmp_path: Path, workspace: Path
) -> None:
    job = run_action(
        tmp_path,
        workspace,
        {"paths": "deploy/*.yaml", "platforms": "gh200", "upload-sarif": "true"},
    )
    assert job.code == 1
    lint = job.outputs["lint"]
    assert lint["verdict"] == "reject" and lint["exit-code"] == "1"
    assert (lint["rejected"], lint["errors"]) == ("1", "0")
    # one annotation, on the block-size line of the repository's file
    assert re.search(
        r"^::error file=deploy/qwen3-8b-eagle3-gh200-triton-128\.yaml,line=5,"
        r"title=KV101 component-mismatch \[GH200 \(sm90\)\]::",
        job.log,
        re.M,
    ), job.log
    sarif = json.loads(Path(lint["sarif-file"]).read_text(encoding="utf-8"))
    [result] = sarif["runs"][0]["results"]
    assert result["ruleId"] == "KV101"
    uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "deploy/qwen3-8b-eagle3-gh200-triton-128.yaml"
    assert Path(lint["sarif-file"]).parent == tmp_path / "runner-temp"
    assert job.uploads == [
        {
            "uses": "github/codeql-action/upload-sarif@v3",
            "sarif_file": lint["sarif-file"],
            "category": "kvconfig",
        }
    ]
    assert job.ran[-1] == "Fail by fail-on"
    assert "| deploy/qwen3-8b-eagle3-gh200-triton-128.yaml | GH200 (sm90) | reject |" in job.summary


def test_fail_on_none_reports_and_passes(tmp_path: Path, workspace: Path) -> None:
    job = run_action(
        tmp_path, workspace, {"paths": "deploy/", "platforms": "gh200", "fail-on": "none"}
    )
    assert job.code == 0
    assert job.outputs["lint"]["verdict"] == "reject"
    assert job.outputs["lint"]["sarif-file"] == "" and not job.uploads
    assert "::error file=deploy/qwen3-8b-eagle3-gh200-triton-128.yaml" in job.log
    assert "Fail by fail-on" not in job.ran


@pytest.mark.parametrize(("fail_on", "code"), [("error", 0), ("warning", 1)])
def test_fail_on_warning_fails_on_a_warning(
    tmp_path: Path, workspace: Path, fail_on: str, code: int
) -> None:
    # the prefill engine takes variables from a Secret only the cluster holds: KV804, a warning
    job = run_action(
        tmp_path,
        workspace,
        {
            "paths": "k8s/pd-decode-prefill-manifest.yaml",
            "model-path": "# the chart's model, read from the repository\n"
            "Qwen/Qwen3-8B=deploy/models/qwen3-8b\n",
            "fail-on": fail_on,
        },
    )
    lint = job.outputs["lint"]
    assert (job.code, lint["verdict"], lint["warnings"]) == (code, "ok", "1")
    assert "::warning file=k8s/pd-decode-prefill-manifest.yaml" in job.log
    assert "title=KV804 runtime-environment [H100 (sm90)]" in job.log


def test_an_unreadable_file_is_an_annotation_and_exit_2(tmp_path: Path, workspace: Path) -> None:
    (workspace / "deploy" / "broken.yaml").write_text("block-size: [\n", encoding="utf-8")
    job = run_action(
        tmp_path,
        workspace,
        {"paths": "deploy/broken.yaml deploy/qwen3-8b-eagle3-gh200-triton-64.yaml",
         "platforms": "h100", "sarif": "true"},
    )  # fmt: skip
    assert job.code == 2
    lint = job.outputs["lint"]
    assert (lint["verdict"], lint["errors"], lint["exit-code"]) == ("error", "1", "2")
    annotation = "::error file=deploy/broken.yaml,line=2,title=kvconfig input error::invalid YAML"
    assert annotation in job.log
    sarif = json.loads(Path(lint["sarif-file"]).read_text(encoding="utf-8"))
    assert [r["ruleId"] for r in sarif["runs"][0]["results"]] == ["input-error"]
    assert not job.uploads  # sarif without upload-sarif: the file only


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({"paths": "deploy/", "fail-on": "sometimes"}, "fail-on: expected one of error, warning"),
        ({"paths": "nothing/**/*.yaml"}, "paths: 'nothing/**/*.yaml' matches no file"),
        ({"paths": "deploy/", "sarif": "yes"}, "sarif: expected true or false, got 'yes'"),
        ({"paths": "deploy/", "env": "NOEQUALS"}, "--env: expected KEY=VALUE"),
        ({"paths": "  "}, "paths: no paths given"),
    ],
)
def test_bad_inputs_of_the_action_fail_with_one_line(
    tmp_path: Path, workspace: Path, inputs: dict[str, str], message: str
) -> None:
    job = run_action(tmp_path, workspace, {"platforms": "h100", **inputs})
    assert job.code == 2
    [line] = [x for x in job.log.splitlines() if x.startswith("::")]
    assert line.startswith("::error title=kvconfig action::") and message in line, line
    assert "Traceback" not in job.log
    assert job.outputs["lint"] == {"verdict": "error", "exit-code": "2"}
    assert "Fail by fail-on" not in job.ran  # the failing step already failed the job


def test_every_input_reaches_the_script_and_the_script_reads_no_other() -> None:
    [lint] = [s for s in STEPS if s.get("id") == "lint"]
    passed = {k: v for k, v in lint["env"].items() if k.startswith("INPUT_")}
    assert set(passed) == set(action.INPUTS.values())
    for name, variable in action.INPUTS.items():
        if name == "sarif":
            continue
        assert passed[variable] == f"${{{{ inputs.{name} }}}}", variable
    # upload-sarif implies sarif; python only picks the interpreter of the install step
    assert set(ACTION["inputs"]) == {*action.INPUTS, "upload-sarif", "python"}
    assert all("description" in v for v in ACTION["inputs"].values())


def test_the_action_installs_kvconfig_from_its_own_checkout() -> None:
    [install] = [s for s in STEPS if s.get("id") == "install"]
    assert ACTION["runs"]["using"] == "composite"
    assert re.search(r'-m pip install [^\n]*"\$GITHUB_ACTION_PATH"$', install["run"], re.M)
    assert 'echo "python=$venv/bin/python" >> "$GITHUB_OUTPUT"' in install["run"]
    # the checkout is an installable project whose module the lint step runs
    assert (ROOT / "pyproject.toml").exists()
    assert "-m kvconfig.cli.action" in next(s["run"] for s in STEPS if s.get("id") == "lint")


def test_the_script_refuses_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    assert action.main(["--platform", "h100"]) == 2
    assert capsys.readouterr().out.startswith("::error title=kvconfig action::")
