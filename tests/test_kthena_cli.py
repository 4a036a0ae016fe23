"""The Kthena CLI's manifest templates, rendered as ``kthena create manifest`` renders them
(``kvconfig.load.kubernetes.kthena_cli``): Go's ``text/template`` rules for the part the
templates use (trim markers, ``if``/``else``/``end``, pipelines), sprig's ``default`` and
``quote``, Helm's empty output for a missing field."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kvconfig.load.kubernetes.kthena_cli import rendered

_HEAD = "apiVersion: workload.serving.volcano.sh/v1alpha1\nkind: ModelBooster\n"
_TEMPLATES = Path(__file__).parent / "realworld" / "files" / "volcano-sh" / "kthena" / "cli"


@pytest.mark.parametrize(
    ("body", "values", "want"),
    [
        # default: the value when the field is empty (nil, "", 0, false), chained
        ('a: {{ .Values.x | default "d" | quote }}', {}, 'a: "d"'),
        ('a: {{ .Values.x | default "d" | quote }}', {"x": ""}, 'a: "d"'),
        ('a: {{ .Values.x | default "d" | quote }}', {"x": "v"}, 'a: "v"'),
        ("a: {{ .Values.n | default 2 }}", {"n": 0}, "a: 2"),
        ("a: {{ .Values.n | default 2 }}", {"n": 8}, "a: 8"),
        ('a: {{ .Values.m | default .Values.n | default "z" | quote }}', {"n": "q"}, 'a: "q"'),
        # a missing field prints nothing; quote of nothing is nothing; quote escapes
        ("a: {{ .Values.x }}|", {}, "a: |"),
        ("a: {{ .Values.x | quote }}|", {}, "a: |"),
        ("a: {{ .Values.x | quote }}", {"x": 'say "hi"'}, 'a: "say \\"hi\\""'),
        ("a: {{ .Values.deep.key | default 1 }}", {"deep": {"key": 3}}, "a: 3"),
        # {{- and -}} trim the blanks and newlines beside them; if/else/end
        ("x: 1\n  {{- if .Values.ns }}\nns: {{ .Values.ns }}\n  {{- end }}\ny: 2", {"ns": "d"},
         "x: 1\nns: d\ny: 2"),
        ("x: 1\n  {{- if .Values.ns }}\nns: {{ .Values.ns }}\n  {{- end }}\ny: 2", {},
         "x: 1\ny: 2"),
        ("{{ if .Values.a }}A{{ else }}B{{ end }}", {"a": False}, "B"),
        ("{{ if .Values.a }}A{{ else }}B{{ end }}", {"a": 1}, "A"),
        ("{{ if .Values.a }}{{ if .Values.b }}AB{{ else }}A{{ end }}{{ end }}.", {"a": 1}, "A."),
        ("a: {{ .Values.x | default 0.9 }} {{- /* */ -}}", {}, None),
        # anything else is no CLI template: left to the unrendered-template error
        ("a: {{ include \"x\" . }}", {}, None),
        ("a: {{ .Values.x | upper }}", {}, None),
        ('a: {{ .Values.x | default "a\\q" }}', {}, None),
        ("{{ range .Values.l }}x{{ end }}", {}, None),
        ("{{ if .Values.a }}never closed", {}, None),
    ],
)  # fmt: skip
def test_the_cli_templates_language(body: str, values: dict[str, object], want: str | None) -> None:
    got = rendered(_HEAD + body, values)
    assert got == (None if want is None else _HEAD + want)


def test_only_a_model_booster_is_a_cli_template() -> None:
    assert rendered('kind: Deployment\nname: {{ .Values.x | default "d" }}', {}) is None


def test_every_cli_template_in_the_corpus_renders_to_yaml() -> None:
    """The CLI's own templates, with the CLI's default values: no action is left, and each
    is one ModelBooster whose defaults are filled in."""
    files = sorted(_TEMPLATES.rglob("*.yaml"))
    assert len(files) >= 4
    for path in files:
        text = rendered(path.read_text())
        assert text is not None, path
        assert "{{" not in text, path
        doc = yaml.safe_load(text)
        assert doc["kind"] == "ModelBooster", path
        assert doc["metadata"]["namespace"] == "default", path
        assert doc["spec"]["backend"]["modelURI"].startswith("hf://"), path
