"""Hypothesis-built inputs of every format, beside the byte mutations of ``contract``.

A mutation mostly breaks the syntax, so most mutated inputs stop at the first reader. A
generated input is well-formed: Hypothesis takes a seed of the format, parses it (YAML,
JSON, shell words or TOML) and edits its data (a value replaced by any JSON-like value or
by one of kvconfig's sensitive ones, a key added or removed, a list item dropped), then
writes it back in the format's own syntax, so the edits reach the loaders, the planner and
the reports behind the parser. Each input runs through ``Workspace.run``, with the same
checks as a mutated one.
"""

from __future__ import annotations

import functools
import json
import pickle
import re
import shlex
from collections.abc import Callable
from typing import Any

import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as seeded
from hypothesis import strategies as st

from tests.fuzz.contract import Tally, Workspace

#: Values that matter to kvconfig (block sizes, backends, dtypes, paths, ids, shell).
SENSITIVE = (
    0, 1, 16, 32, 64, 128, 256, 512, 1024, -1, 2**63, 1.5, "16", "auto", "fp8", "fp8_e5m2",
    "bfloat16", "FLASHINFER", "FLASH_ATTN", "TRITON_ATTN", "FLASHMLA", "CUTLASS_MLA",
    "eagle3", "mtp", "deepseek_mtp", "ngram", "./models/qwen3-8b", "./models/deepseek-v3",
    "./models/qwen3-8b-eagle3-angelslim", "Qwen/Qwen3-8B", "hf://Qwen/Qwen3-8B",
    "/mnt/models", "../../../etc/passwd", "/dev/zero", "${X}", "${X:-16}", "$(id)",
    "vllm serve ./models/qwen3-8b --block-size 16", "NixlConnector", "kv_both",
    "vllm/vllm-openai:v0.32.0", '{"method": "ngram", "num_speculative_tokens": 3}',
)  # fmt: skip
KEYS = (
    "model", "block-size", "block_size", "kv-cache-dtype", "attention-backend",
    "speculative-config", "tensor-parallel-size", "pipeline-parallel-size", "max-model-len",
    "kv-transfer-config", "hf-overrides", "args", "command", "env", "image", "replicas",
    "resources", "name", "value", "platform", "platforms", "kvconfig", "engines", "groups",
    "model-paths", "vllm-version", "extraArgs", "vllmConfig", "modelURL", "storageUri",
)  # fmt: skip

#: vLLM serve options among ``KEYS`` (a pasted command's edits).
OPTIONS = KEYS[:10]

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=16)
    | st.sampled_from(SENSITIVE)
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def _places(data: Any, out: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """Every (container, key or index) in ``data``, depth first."""
    if isinstance(data, dict):
        for k, v in data.items():
            out.append((data, k))
            _places(v, out)
    elif isinstance(data, list):
        for i, v in enumerate(data):
            out.append((data, i))
            _places(v, out)
    return out


def edit(data: Any, draw: Callable[[st.SearchStrategy[Any]], Any]) -> Any:
    """``data`` with 0 to 4 edits Hypothesis chooses (none: the seed, rewritten)."""
    for _ in range(draw(st.integers(0, 4))):
        places = _places(data, [])
        if not places:
            data = draw(VALUES) if data is None or draw(st.booleans()) else data
            if not isinstance(data, (dict, list)):
                return data
            continue
        box, key = draw(st.sampled_from(places))
        action = draw(st.integers(0, 3))
        if action == 0:
            box[key] = draw(VALUES)
        elif action == 1:
            del box[key]
        elif action == 2 and isinstance(box, dict):
            box[draw(st.sampled_from(KEYS) | st.text(max_size=12))] = draw(VALUES)
        elif action == 2:
            box.insert(key, draw(VALUES))
        else:
            box[key] = draw(st.sampled_from(SENSITIVE))
    return data


def _key(key: Any) -> str:
    text = str(key)
    return text if text and re.fullmatch(r"[A-Za-z0-9_-]+", text) else _string(text)


def _string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _toml(value: Any) -> str:
    """A TOML value (``None``, which TOML lacks, as an empty string)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k)} = {_toml(v)}" for k, v in value.items()) + "}"
    return _string("" if value is None else str(value))


def _toml_table(data: dict[Any, Any], name: str = "") -> list[str]:
    """A TOML document's lines: mappings as ``[table]`` headers (``[tool.kvconfig]``)."""
    lines = [f"{_key(k)} = {_toml(v)}" for k, v in data.items() if not isinstance(v, dict)]
    for k, v in data.items():
        if isinstance(v, dict):
            sub = f"{name}.{_key(k)}" if name else _key(k)
            lines += [f"[{sub}]", *_toml_table(v, sub)]
    return lines


@functools.cache
def _documents(seed: bytes) -> bytes:
    """A YAML seed's documents, pickled: each input edits a fresh copy (unpickling costs a
    small part of parsing the seed again)."""
    text = seed.decode("utf-8", "replace")
    return pickle.dumps(list(yaml.load_all(text, Loader=yaml.CSafeLoader)))


#: Shell statements a generated script gains (``{v}``: a drawn value, quoted or not;
#: ``{k}``: a vLLM option): assignments, control flow, functions, redirections, the
#: constructs the shell reader decides or leaves to run time.
STATEMENTS = (
    "X={v}", "export BLOCK_SIZE={v}", "readonly X={v}", "set -e", "set -u", "set -- {v} {v}",
    "if [ \"$X\" = {v} ]; then BLOCK_SIZE={v}; else BLOCK_SIZE=16; fi",
    "case {v} in a|b) X={v} ;; *) X=1 ;; esac", "for i in {v} {v}; do X=$i; done",
    "f() {{ local X={v}; echo \"$X\"; }}; f {v}", "cd {v} || exit 1", "shift",
    "vllm serve {v} --{k} {v} &", "vllm serve ./models/qwen3-8b --block-size {v}",
    "cat > {v} <<EOF\nvllm serve {v}\nEOF", "bash {v}", ". {v}", "wait", "exit {v}",
    "X=$(({v} + 1))", "ARGS=({v} --{k} {v})", "eval {v}", "trap 'kill 0' EXIT",
    "while true; do break; done", "( X={v}; vllm serve {v} ) &", "source {v}",
    "declare -A M=([{v}]={v} [k]={v})", "M[{v}]+={v}", "A[{v}]={v}", "unset 'M[{v}]'",
    "vllm serve ./models/qwen3-8b --block-size ${{M[{v}]:-16}} ${{!M[@]}} ${{A[@]}}",
    "tmux new-session -d -s {v} -e X={v} \"vllm serve {v} --{k} {v}\"",
    "tmux send-keys -t {v} \"vllm serve {v}\" {v} Enter", "screen -dmS {v} vllm serve {v}",
)  # fmt: skip


def _script(text: str, draw: Callable[[st.SearchStrategy[Any]], Any]) -> str:
    """A shell script with 1 to 4 statements of ``STATEMENTS`` inserted between its lines."""
    lines = text.split("\n")
    for _ in range(draw(st.integers(1, 4))):
        pattern = draw(st.sampled_from(STATEMENTS))
        parts = pattern.split("{v}")
        out = parts[0]
        for part in parts[1:]:
            value = draw(VALUES)
            shown = value if isinstance(value, str) else json.dumps(value)
            out += (shlex.quote(shown) if draw(st.booleans()) else shown) + part
        out = out.replace("{k}", draw(st.sampled_from(OPTIONS))).replace("{{", "{")
        lines.insert(draw(st.integers(0, len(lines))), out.replace("}}", "}"))
    return "\n".join(lines)


def build(fmt: str, seed: bytes, draw: Callable[[st.SearchStrategy[Any]], Any]) -> bytes:
    """One generated input of ``fmt`` from ``seed``."""
    text = seed.decode("utf-8", "replace")
    if fmt == "script":
        return _script(text, draw).encode("utf-8", "surrogatepass")
    if fmt == "command":
        words = shlex.split(text)
        for _ in range(draw(st.integers(0, 4))):
            at = draw(st.integers(0, len(words)))
            action = draw(st.integers(0, 2))
            if action == 0 and at < len(words):
                del words[at]
            elif action == 1:
                key = draw(st.sampled_from(OPTIONS))
                value = draw(VALUES)
                shown = value if isinstance(value, str) else json.dumps(value)
                words[at:at] = [f"--{key}", shown]
            else:
                words[at:at] = [str(draw(SCALARS))]
        return shlex.join(words).encode("utf-8", "surrogatepass")
    if fmt == "diff":
        return json.dumps(edit(json.loads(text), draw)).encode("utf-8", "surrogatepass")
    if fmt == "repo":
        import tomllib

        data = edit(tomllib.loads(text), draw)
        lines = _toml_table(data) if isinstance(data, dict) else [_toml(data)]
        return "\n".join(lines).encode("utf-8", "surrogatepass")
    docs = [edit(d, draw) for d in pickle.loads(_documents(seed))]
    return yaml.dump_all(docs, Dumper=yaml.CSafeDumper, sort_keys=False).encode(
        "utf-8", "surrogatepass"
    )


def _parses(fmt: str, seed: bytes) -> bool:
    """Whether ``build`` can read ``seed`` (a few real files are templates, not YAML)."""
    try:
        build(fmt, seed, lambda strategy: 0)
    except (yaml.YAMLError, ValueError, TypeError):
        return False
    return True


def generated(
    work: Workspace,
    fmt: str,
    count: int,
    seed: int = 0,
    *,
    progress: Callable[[Tally], None] | None = None,
) -> Tally:
    """``count`` Hypothesis-built inputs of ``fmt`` (seeded by ``seed``), tallied."""
    seeds = work.seeds[fmt]
    usable = [i for i, s in enumerate(seeds) if _parses(fmt, s)]
    tally = Tally()

    @settings(
        max_examples=count,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @seeded(seed)
    @given(st.data())
    def one(data: st.DataObject) -> None:
        index = data.draw(st.sampled_from(usable))
        raw = build(fmt, seeds[index], data.draw)
        work.run(fmt, raw, index, tally)
        if progress is not None and tally.inputs % 1000 == 0:
            progress(tally)

    one()
    return tally
