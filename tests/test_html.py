"""``--format html``: the page says what the plan says (groups, pages, who reads them
wrong), is one self-contained document (no script, no address to load), escapes every
string it read, and imports neither torch nor vLLM. The page in a real browser:
tests/test_html_browser.py."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from kvconfig.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
SEED = str(EXAMPLES / "qwen3-8b-eagle3-gh200-triton-128.yaml")
VOID = {"meta", "br", "img", "input", "link", "hr", "col", "area", "base", "wbr", "source"}
SVG_EMPTY = {"rect", "line", "path", "circle"}


class Tree(HTMLParser):
    """Elements as (tag, attributes, text inside), and whether every tag closes."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.problems: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"</{tag}> closes {self.stack[-1:]}")
            return
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(page: str) -> Tree:
    t = Tree()
    t.feed(page)
    t.close()
    assert t.problems == [] and t.stack == [], (t.problems, t.stack)
    return t


def run(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(args), stdout=out)
    return code, out.getvalue()


def readers(t: Tree) -> list[dict[str, str | None]]:
    return [a for tag, a in t.elements if a.get("data-kv") == "reader"]


def self_contained(t: Tree) -> None:
    """No script, nothing to fetch, and the policy that forbids both."""
    tags = {tag for tag, _ in t.elements}
    assert not tags & {"script", "img", "iframe", "object", "embed", "link", "image", "use"}
    for tag, a in t.elements:
        assert not {"src", "href", "xlink:href", "srcset", "action"} & a.keys(), tag
        assert not any(k.startswith("on") for k in a), (tag, a)
        assert "url(http" not in (a.get("style") or "")
    (csp,) = [a for tag, a in t.elements if a.get("http-equiv") == "Content-Security-Policy"]
    assert (csp["content"] or "").startswith("default-src 'none'")


def test_seed_page_marks_the_speculator_reading_the_unsplit_block() -> None:
    code, page = run("plan", SEED, "--platform", "gh200", "--format", "html")
    assert code == 1
    t = parse(page)
    self_contained(t)
    (svg,) = [a for tag, a in t.elements if tag == "svg" and a.get("data-kv") == "group"]
    assert svg["role"] == "img" and svg["aria-labelledby"]
    by = {a["data-reader"]: a["data-wrong"] for a in readers(t)}
    assert by == {"runner": "false", "speculator": "true"}
    text = " ".join(t.text)
    assert "each split into 2 kernel pages of 64 tokens" in text
    assert "reads 128-token pages: each block unsplit; the cache holds 64-token pages" in text
    # two blocks of two 64-token pages, the runner's four bars and the speculator's two
    pages = [a for tag, a in t.elements if tag == "rect" and a.get("class") == "page"]
    assert len(pages) == 4
    wrong = [a for tag, a in t.elements if tag == "rect" and a.get("class") == "read-wrong"]
    assert len(wrong) == 2
    assert [a["data-code"] for _, a in t.elements if a.get("data-kv") == "finding"] == ["KV101"]


@pytest.mark.parametrize(
    ("args", "code", "wrong"),
    [
        (("qwen3-8b-eagle3-gh200-triton-64.yaml", "--platform", "gh200"), 0, "false"),
        (("qwen3-8b-eagle3-gh200-triton-128.yaml", "--platform", "gh200"), 1, "true"),
        (("qwen3-8b-eagle3-gh200-triton-128.yaml", "--platform", "b200"), 0, "false"),
        (
            ("qwen3-8b-eagle3-gh200-triton-128.yaml", "--platform", "gh200", "--hooks", "enforce"),
            0,
            "false",
        ),
    ],
    ids=["64", "128", "128-b200", "128-hooks"],
)
def test_the_mark_follows_the_plan(args: tuple[str, ...], code: int, wrong: str) -> None:
    name, *rest = args
    got, page = run("plan", str(EXAMPLES / name), *rest, "--format", "html")
    assert got == code
    _, doc = run("plan", str(EXAMPLES / name), *rest, "--format", "json")
    (g,) = json.loads(doc)["groups"]
    by = {a["data-reader"]: a["data-wrong"] for a in readers(parse(page))}
    assert by == {"runner": "false", "speculator": wrong}
    assert (g["components"]["speculator"] != g["kernel_block_size"]) == (wrong == "true")


def test_explain_adds_the_steps() -> None:
    code, page = run("explain", SEED, "--platform", "gh200", "--format", "html")
    assert code == 0
    t = parse(page)
    self_contained(t)
    assert "Step by step" in t.text
    assert any("2. Group 0 (full_attention): B = 128" in x for x in t.text)
    code, page = run("explain", "KV101", "--format", "html")
    assert code == 0 and "component-mismatch" in page
    self_contained(parse(page))


def test_lint_pages_every_deployment() -> None:
    files = [str(EXAMPLES / f"qwen3-8b-eagle3-gh200-triton-{b}.yaml") for b in (64, 128, 256)]
    code, page = run("lint", *files, "--platform", "gh200", "--format", "html")
    assert code == 1
    t = parse(page)
    sections = [a["data-verdict"] for _, a in t.elements if a.get("data-kv") == "deployment"]
    assert sections == ["ok", "reject", "reject"]
    assert [a["data-wrong"] for a in readers(t) if a["data-reader"] == "speculator"] == [
        "false",
        "true",
        "true",
    ]


def _edges(t: Tree) -> list[tuple[str, str]]:
    return [
        (a["data-wrong"] or "", a["data-codes"] or "")
        for _, a in t.elements
        if a.get("data-kv") == "edge"
    ]


@pytest.mark.parametrize(
    ("fleet", "edges", "nodes"),
    [
        ("correct-pd", [("false", ""), ("false", ""), ("false", "")], {}),
        ("nixl-tp-split", [("true", "KV704")], {}),
        ("dynamo-router-16", [("true", "KV711")], {}),
        ("multiconnector-layouts", [], {"prefill": "true"}),
        (
            "llm-d-prefix-hashing",
            [("false", ""), ("true", "KV712"), ("true", "KV712"), ("true", "KV715")],
            {},
        ),
    ],
)
def test_fleet_graph_marks_the_disagreeing_edges(
    fleet: str, edges: list[tuple[str, str]], nodes: dict[str, str]
) -> None:
    path = str(EXAMPLES / "fleets" / f"{fleet}.yaml")
    code, page = run("lint", "--fleet", path, "--format", "html")
    assert code == (0 if fleet == "correct-pd" else 1)
    t = parse(page)
    self_contained(t)
    assert sorted(_edges(t)) == sorted(edges)
    marked = {
        a["data-name"]: a["data-wrong"] for _, a in t.elements if a.get("data-kv") == "engine"
    }
    assert {k: v for k, v in marked.items() if v == "true"} == {
        k: v for k, v in nodes.items() if v == "true"
    }


def test_fleet_connector_reading_other_pages_is_marked() -> None:
    # nixl-global-vote: group 1 runs 128-token pages, the NIXL connector votes 64 (KV701)
    path = str(EXAMPLES / "fleets" / "nixl-global-vote.yaml")
    _, page = run("lint", "--fleet", path, "--format", "html")
    wrong = {(a["data-reader"], a["data-wrong"]) for a in readers(parse(page))}
    assert ("NixlConnector", "true") in wrong and ("runner", "true") not in wrong


def hostile_fleet(folder: Path) -> tuple[Path, list[str]]:
    """A fleet whose file, fleet and engine names are markup and attribute breakers."""
    names = ["<img src=x onerror=alert(1)>", "\"' onmouseover=alert(2) x=&amp;"]
    model = ROOT / "examples" / "models" / "qwen3-8b"
    text = f"""kvconfig_fleet: 1
name: "</title><script>alert(3)</script>"
platform: h100
engines:
  - name: {json.dumps(names[0])}
    role: prefill
    command: vllm serve {model} --block-size 128 --attention-backend FLASHINFER
    kv_transfer_config: {{kv_connector: NixlConnector, kv_role: kv_producer}}
  - name: {json.dumps(names[1])}
    role: decode
    platform: b200
    command: vllm serve {model} --block-size 128 --attention-backend FLASHINFER
    kv_transfer_config: {{kv_connector: NixlConnector, kv_role: kv_consumer}}
router: {{kind: dynamo, block_size: 16}}
"""
    path = folder / "fleet\"<em id=x>&amp;'.yaml"
    path.write_text(text, encoding="utf-8")
    return path, names


def test_every_string_from_input_is_escaped(tmp_path: Path) -> None:
    path, names = hostile_fleet(tmp_path)
    code, page = run("lint", "--fleet", str(path), "--format", "html")
    assert code == 1
    t = parse(page)
    self_contained(t)
    for bad in ("<img", "<em", "<script", "onerror=alert(1)>", "' onmouseover"):
        assert bad not in page
    # the names survive as text and as attribute values, unchanged
    assert sorted(a["data-name"] or "" for _, a in t.elements if a.get("data-kv") == "engine") == (
        sorted(names)
    )
    assert any(path.name in x for x in t.text)


def test_html_imports_neither_torch_nor_vllm() -> None:
    script = (
        "import sys, io\n"
        "from kvconfig.cli import main\n"
        f"main(['plan', {SEED!r}, '--platform', 'gh200', '--format', 'html'], "
        "stdout=io.StringIO())\n"
        f"main(['lint', '--fleet', {str(EXAMPLES / 'fleets' / 'nixl-tp-split.yaml')!r}, "
        "'--format', 'html'], stdout=io.StringIO())\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'vllm'))\n"
        "assert not bad, bad\n"
        "assert 'kvconfig.report.html' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", script], cwd=ROOT, check=True)


def test_a_group_without_a_page_size_and_a_packed_group() -> None:
    from kvconfig.report.html.groups import GroupView, Reader, group_figure

    none = GroupView("x", 3, "full_attention", 256, None, False, (Reader("runner", None),))
    t = parse(group_figure(none))
    assert any("no kernel page size suits every backend" in x for x in t.text)
    assert [a["data-wrong"] for _, a in t.elements if a.get("data-kv") == "group-figure"] == [
        "true"
    ]
    packed = GroupView("y", 0, "mamba", 1040, 1040, True, (Reader("runner", 1040),))
    t = parse(group_figure(packed))
    assert any("packed state, never split (one page per block)" in x for x in t.text)
    assert len([a for tag, a in t.elements if a.get("class") == "page"]) == 2
    # more pages than are drawn one by one: one shaded bar per block, with the count
    many = GroupView("z", 0, "full_attention", 2048, 16, False, (Reader("runner", 16),))
    t = parse(group_figure(many))
    assert any("128 x 16 tokens" in x for x in t.text)
