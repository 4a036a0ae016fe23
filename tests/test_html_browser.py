"""Every example's ``--format html`` page in a real browser (Debian's headless Chromium,
driven over the DevTools protocol, tests/browser.py): the groups, blocks, pages and
readers are drawn and visible inside their pictures, what the plan reads wrong is visibly
marked (hatched, dashed, a cross), a fleet's disagreeing edges are, no script error, no
request beyond the page itself. Each page and its screenshot are kept in the folder the
test prints ($KVCONFIG_ARTIFACTS, else pytest's temporary folder).

In CI (``CI=true``, as .ci/run sets it) a missing Chromium fails the test: .ci/run installs
Debian's ``chromium`` when it is missing.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kvconfig.cli import main
from tests.browser import Browser, alive, chromium
from tests.test_html import hostile_fleet

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
IN_CI = os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")
PLATFORMS = ("a100", "l40s", "h100", "h200", "gh200", "b200", "gb300")
WRONG = "\u2717"

#: Layout facts, measured in the page: what is drawn, its box, and whether it shows.
FACTS = r"""JSON.stringify((() => {
  const all = (root, sel) => Array.from(root.querySelectorAll(sel));
  const width = document.documentElement.clientWidth;
  const shown = el => {
    const r = el.getBoundingClientRect(), s = getComputedStyle(el);
    return r.width > 0 && r.height > 0 && s.visibility === 'visible' && s.display !== 'none'
      && Number(s.opacity) > 0 && r.left >= 0 && r.right <= width + 1;
  };
  const inside = (el, box) => {
    const r = el.getBoundingClientRect();
    return r.left >= box.left - 1 && r.right <= box.right + 1
      && r.top >= box.top - 1 && r.bottom <= box.bottom + 1;
  };
  const marks = (g, box) => all(g, 'text').filter(
    t => t.textContent.includes('\u2717') && shown(t) && inside(t, box)).length;
  const hatched = g => all(g, 'rect').some(r => {
    const s = getComputedStyle(r);
    return s.fill.startsWith('url(') && s.strokeDasharray !== 'none'; });
  return {
    title: document.title,
    scrollWidth: document.documentElement.scrollWidth, width,
    foreign: all(document, 'script, img, iframe, object, embed, link, image, use').length,
    verdicts: all(document, '[data-kv=verdict]').map(e => [e.textContent, shown(e)]),
    findings: all(document, '[data-kv=finding]').map(e => [e.dataset.code, shown(e)]),
    groups: all(document, 'svg[data-kv=group]').map(svg => {
      const box = svg.getBoundingClientRect();
      const title = document.getElementById(svg.getAttribute('aria-labelledby').split(' ')[0]);
      return {
        group: Number(svg.dataset.group), shown: shown(svg), title: title.textContent,
        blocks: all(svg, '[data-kv=block]').filter(b => shown(b) && inside(b, box)).length,
        pages: all(svg, '[data-kv=pages] rect').filter(p => shown(p) && inside(p, box)).length,
        texts: all(svg, 'text').filter(t => !(shown(t) && inside(t, box))).length,
        readers: all(svg, '[data-kv=reader]').map(g => ({
          name: g.dataset.reader, wrong: g.dataset.wrong === 'true',
          bars: all(g, 'rect').filter(r => shown(r) && inside(r, box)).length,
          marks: marks(g, box), hatched: hatched(g) })) };
    }),
    fleet: all(document, 'svg[data-kv=fleet]').map(svg => {
      const box = svg.getBoundingClientRect();
      const node = g => { const rect = g.querySelector('rect'), r = rect.getBoundingClientRect();
        return { name: g.dataset.name, wrong: g.dataset.wrong === 'true',
          shown: shown(rect) && inside(rect, box), marks: marks(g, box),
          spill: all(g, 'text').filter(t => !(shown(t) && inside(t, r))).length }; };
      const labels = all(svg, '[data-kv=edge] text').map(t => t.getBoundingClientRect());
      const overlaps = labels.filter((a, i) => labels.some((b, j) => j !== i
        && a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom)).length;
      return {
        shown: shown(svg), overlaps,
        engines: all(svg, '[data-kv=engine]').map(node),
        routers: all(svg, '[data-kv=router]').map(node),
        edges: all(svg, '[data-kv=edge]').map(g => {
          const path = g.querySelector('path'), s = getComputedStyle(path);
          return { wrong: g.dataset.wrong === 'true', codes: g.dataset.codes,
            drawn: path.getTotalLength() > 0 && Number(s.strokeWidth.replace('px', '')) > 0,
            dashed: s.strokeDasharray !== 'none', marks: marks(g, box),
            label: shown(g.querySelector('text')) && inside(g.querySelector('text'), box) }; }),
      };
    }),
  };
})())"""


def _platform(path: Path) -> list[str]:
    """The platform an example is named for (its own ``platform:`` for native files)."""
    named = [p for p in re.split(r"[-.]", path.name) if p in PLATFORMS]
    return [] if path.parent.name == "native" else ["--platform", named[0]]


PLANS = sorted([*EXAMPLES.glob("*.yaml"), *(EXAMPLES / "native").glob("*.yaml")])
FLEETS = sorted((EXAMPLES / "fleets").glob("*.yaml"))


def _cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    return main(list(args), stdout=out), out.getvalue()


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Path:
    given = os.environ.get("KVCONFIG_ARTIFACTS")
    folder = Path(given) / "html" if given else tmp_path_factory.mktemp("html")
    folder.mkdir(parents=True, exist_ok=True)
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"html pages and screenshots: {folder}")
    return folder


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if chromium() is None:
        message = "chromium is not installed (apt-get install -y chromium; .ci/run installs it)"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    b = Browser()
    try:
        yield b
    finally:
        b.close()
    assert not alive(b.proc.pid), "a Chromium process outlived the test"
    assert not Path(b.profile).exists()


def _show(browser: Browser, page: str, name: str, artifacts: Path) -> dict[str, Any]:
    """Write the page, load it, keep its screenshot; no error, nothing fetched."""
    html_path = artifacts / f"{name}.html"
    html_path.write_text(page, encoding="utf-8")
    url = html_path.as_uri()
    loaded = browser.load(url, FACTS, screenshot=artifacts / f"{name}.png")
    assert loaded.errors == []
    assert loaded.requests == [url]
    facts = loaded.facts
    assert facts["foreign"] == 0
    assert facts["scrollWidth"] <= facts["width"], "the page scrolls sideways"
    assert facts["verdicts"] and all(shown for _, shown in facts["verdicts"])
    assert all(shown for _, shown in facts["findings"])
    assert (artifacts / f"{name}.png").stat().st_size > 10_000
    return facts


def _check_groups(facts: dict[str, Any], groups: list[dict[str, Any]]) -> None:
    """Each planned group drawn: two blocks, B/k pages each, a bar per page a reader reads."""
    drawn = {g["group"]: g for g in facts["groups"]}
    assert sorted(drawn) == sorted(g["id"] for g in groups)
    for g in groups:
        d = drawn[g["id"]]
        assert d["shown"] and d["blocks"] == 2 and d["texts"] == 0, d
        k = g["kernel_block_size"] or g["block_size"]
        split = g["block_size"] // k
        assert d["pages"] == 2 * split if split <= 96 else d["pages"] == 2
        assert f"blocks of {g['block_size']} tokens" in d["title"]
        for r in d["readers"]:
            assert r["bars"] > 0 or r["name"] != "runner"
            assert r["wrong"] == (r["marks"] > 0 and r["hatched"]), r


@pytest.mark.parametrize("path", PLANS, ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_example_plan_page(path: Path, browser: Browser, artifacts: Path, tmp_path: Path) -> None:
    args = [str(path.relative_to(ROOT)), *_platform(path)]
    code, page = _cli("plan", *args, "--format", "html")
    _, doc = _cli("plan", *args, "--format", "json")
    plan = json.loads(doc)
    assert code == (1 if plan["verdict"] == "reject" else 0)
    name = "plan-" + "-".join(path.relative_to(EXAMPLES).with_suffix("").parts)
    facts = _show(browser, page, name, artifacts)
    ((verdict, _),) = facts["verdicts"]
    assert ("rejected" in verdict) == (plan["verdict"] == "reject")
    _check_groups(facts, plan["groups"])
    wrong = {
        g["id"]
        for g in plan["groups"]
        if g["components"]["speculator"] not in (None, g["kernel_block_size"])
    }
    marked = {g["group"] for g in facts["groups"] for r in g["readers"] if r["wrong"]}
    assert marked == wrong
    if plan["verdict"] == "reject":  # the mismatch is visible: marked readers, or the error
        errors = {f["code"] for f in plan["findings"] if f["severity"] == "error"}
        assert errors <= {c for c, shown in facts["findings"] if shown}
        assert marked or "KV101" not in errors
    if path.name == "qwen3-8b-eagle3-gh200-triton-128.yaml":  # the seed: 2 x 64 under 128
        (g,) = facts["groups"]
        by = {r["name"]: r for r in g["readers"]}
        assert g["pages"] == 4 and by["runner"]["bars"] == 4 and not by["runner"]["wrong"]
        assert by["speculator"]["wrong"] and by["speculator"]["bars"] == 2


@pytest.mark.parametrize("path", FLEETS, ids=lambda p: p.stem)
def test_example_fleet_page(path: Path, browser: Browser, artifacts: Path) -> None:
    rel = str(path.relative_to(ROOT))
    code, page = _cli("lint", "--fleet", rel, "--format", "html")
    _, text = _cli("lint", "--fleet", rel, "--format", "json")
    doc = json.loads(text)
    assert code == (1 if doc["verdict"] == "reject" else 0)
    facts = _show(browser, page, f"fleet-{path.stem}", artifacts)
    (fleet,) = facts["fleet"]
    assert fleet["shown"]
    assert sorted(e["name"] for e in fleet["engines"]) == sorted(e["name"] for e in doc["engines"])
    assert all(n["shown"] and n["spill"] == 0 for n in fleet["engines"] + fleet["routers"])
    assert fleet["overlaps"] == 0, "edge labels overlap"
    assert len(fleet["routers"]) == (doc["router"]["kind"] != "none")
    for e in fleet["edges"]:
        assert e["drawn"] and e["label"], e
        assert e["wrong"] == (e["dashed"] and e["marks"] > 0), e
    for n in fleet["engines"]:
        assert n["wrong"] == (n["marks"] > 0), n
    # every error of the fleet is visible on the graph: an edge or an engine carries its code
    on_graph = " ".join(e["codes"] for e in fleet["edges"] if e["wrong"])
    for f in doc["findings"]:
        if f["severity"] == "error":
            assert f["code"] in on_graph or any(
                n["wrong"] for n in fleet["engines"] if n["name"] in f["engines"]
            ), f["code"]
    if doc["verdict"] == "ok":
        assert not any(e["wrong"] for e in fleet["edges"])
    for e in doc["engines"]:
        _check_groups_of_engine(facts, e)


def _check_groups_of_engine(facts: dict[str, Any], engine: dict[str, Any]) -> None:
    titles = [g["title"] for g in facts["groups"]]
    for c in engine["components"]:
        assert any(f"KV-cache group {c['group']} " in t for t in titles)
    for g in facts["groups"]:
        assert g["shown"] and g["blocks"] == 2 and g["texts"] == 0


def test_hostile_names_stay_text(browser: Browser, artifacts: Path, tmp_path: Path) -> None:
    path, names = hostile_fleet(tmp_path)
    code, page = _cli("lint", "--fleet", str(path), "--format", "html")
    assert code == 1
    facts = _show(browser, page, "fleet-hostile-names", artifacts)
    assert facts["foreign"] == 0
    (fleet,) = facts["fleet"]
    assert sorted(n["name"] for n in fleet["engines"]) == sorted(names)
    assert path.name in facts["title"]


def test_ci_fails_without_chromium(tmp_path: Path) -> None:
    # where ``chromium`` is not on PATH, CI=true fails the browser test instead of skipping it
    env = {**os.environ, "CI": "true", "PATH": str(tmp_path)}
    pytest_args = ["-q", "-p", "no:cacheprovider", "--noconftest", "-k", "hostile", __file__]
    run = subprocess.run(
        [sys.executable, "-m", "pytest", *pytest_args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert "chromium is not installed" in run.stdout
