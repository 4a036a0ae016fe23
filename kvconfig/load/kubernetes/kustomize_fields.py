"""What a kustomization generates and replaces: ``configMapGenerator`` and
``replacements``, as kustomize builds them (kubernetes-sigs/kustomize).

``configMapGenerator`` (``api/kv/kv.go``, ``api/internal/generators/configmap.go``): one
ConfigMap per entry, its ``data`` from ``envs`` files (``KEY=VALUE`` lines, ``#`` comments
and blank lines skipped, the value kept as written), ``literals`` (``KEY=VALUE``, one
pair of matching quotes around the value removed) and ``files`` (``[KEY=]PATH``, the
file's text under its base name); ``behavior: merge`` or ``replace`` changes the base's
ConfigMap of that name instead. The name keeps no content hash here: kustomize renames
every reference with it, so the names still match.

``replacements`` (``api/filters/replacement/replacement.go``), in order: the one resource
the ``source`` selects (kind, name, namespace, group, version; its name before a prefix
or suffix also selects it), the value at its ``fieldPath`` (default ``metadata.name``;
missing is an error), a part of it with ``options.delimiter``/``index``; then for every
resource a ``target`` selects and no ``reject`` does, each of its ``fieldPaths``: a path
of fields, ``[key=value]`` list elements, list indexes and ``*`` (every element of a list; kyaml's
``SmarterPathSplitter`` and ``PathMatcher``), a path that finds nothing an error unless
``options.create`` makes it; a scalar keeps its type and takes the value's text, anything else is
replaced, and ``options.delimiter`` replaces one part of the target's text.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

Fail = Callable[[str, str], Exception]
Load = Callable[[Any, str], tuple[Path | None, str]]

DEFAULT_FIELD_PATH = "metadata.name"


def as_list(value: Any, what: str, key: str, fail: Fail) -> list[Any]:
    """``value`` as the list kustomize's types want (unset: empty); a one-line error
    otherwise (``kvconfig.load.kubernetes.kustomize`` reads its fields with it too)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise fail(f"{what} must be a list, not {type(value).__name__}", key)
    return value


def as_map(value: Any, what: str, key: str, fail: Fail) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise fail(f"{what} must be a mapping, not {type(value).__name__}", key)
    return value


def _options(value: Any, fail: Fail) -> tuple[str, int, bool]:
    """A replacement's ``options``: (delimiter, index, create)."""
    options = as_map(value, "options", "replacements", fail)
    delimiter, index = options.get("delimiter") or "", options.get("index") or 0
    if not isinstance(delimiter, str) or isinstance(index, bool) or not isinstance(index, int):
        raise fail("options take a string delimiter and an integer index", "replacements")
    return delimiter, index, bool(options.get("create"))


def generated(data: Mapping[str, Any], resources: list[dict[str, Any]], load: Load,
              fail: Fail) -> list[dict[str, Any]]:  # fmt: skip
    """The ConfigMaps ``configMapGenerator`` adds (those it merges into or replaces in
    ``resources`` are changed there)."""
    out: list[dict[str, Any]] = []
    key = "configMapGenerator"
    for entry in as_list(data.get(key), key, key, fail):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise fail("a configMapGenerator entry needs a name", key)
        values: dict[str, str] = {}
        files = [*as_list(entry.get("envs"), "envs", key, fail), *as_list(
            [entry["env"]] if entry.get("env") else None, "env", key, fail
        )]  # fmt: skip
        for name in files:
            values.update(_env_file(load(name, key)[1], str(name), fail))
        for literal in as_list(entry.get("literals"), "literals", key, fail):
            key, eq, value = str(literal).partition("=")
            if not eq or not key:
                raise fail(f"the literal {literal!r} is not KEY=VALUE", "configMapGenerator")
            values[key] = _unquoted(value)
        for item in as_list(entry.get("files"), "files", key, fail):
            key, eq, path = str(item).partition("=")
            if not eq:
                key, path = Path(str(item)).name, str(item)
            values[key] = load(path, "configMapGenerator")[1]
        meta: dict[str, Any] = {"name": entry["name"]}
        if entry.get("namespace"):
            meta["namespace"] = entry["namespace"]
        behavior = entry.get("behavior") or "create"
        if behavior in ("merge", "replace"):
            same = [r for r in resources if r.get("kind") == "ConfigMap"
                    and (r.get("metadata") or {}).get("name") == entry["name"]]  # fmt: skip
            base = same[0] if same else None
            if base is None:
                raise fail(f"no ConfigMap {entry['name']} to {behavior}", "configMapGenerator")
            old = base.get("data") if behavior == "merge" else None
            base["data"] = {**(old if isinstance(old, dict) else {}), **values}
            continue
        out.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": values})
    return out


def _env_file(text: str, name: str, fail: Fail) -> dict[str, str]:
    """An env file as kustomize reads it (``kv.go``: ``keyValuesFromEnvFileLines``)."""
    out: dict[str, str] = {}
    for number, raw in enumerate(text.removeprefix("\ufeff").splitlines(), start=1):
        line = raw.lstrip()
        if not line or line.startswith("#"):
            continue
        key, eq, value = line.partition("=")
        if not eq:
            # KEY alone takes the value of the environment kustomize runs in: not known
            raise fail(f"{name}:{number}: {key!r} takes its value from the environment "
                       "kustomize runs in", "configMapGenerator")  # fmt: skip
        if re.search(r"\s", key):
            raise fail(f"{name}:{number}: invalid key {key!r}", "configMapGenerator")
        out[key] = value
    return out


def _unquoted(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def replace(data: Mapping[str, Any], resources: list[dict[str, Any]],
            names: Mapping[int, set[str]], load: Load, fail: Fail) -> None:  # fmt: skip
    """Apply the kustomization's ``replacements`` to ``resources`` (``names``: each
    resource's earlier names, by ``id``)."""
    from kvconfig.load.documents import load_documents

    entries: list[Any] = []
    for entry in as_list(data.get("replacements"), "replacements", "replacements", fail):
        if isinstance(entry, dict) and set(entry) == {"path"}:
            text = load(entry["path"], "replacements")[1]
            for doc in load_documents(text, str(entry["path"]))[0]:
                entries.extend(doc.data if isinstance(doc.data, list) else [doc.data])
        else:
            entries.append(entry)
    for entry in entries:
        if not isinstance(entry, dict) or not entry.get("source") or not entry.get("targets"):
            raise fail("replacements must specify a source and at least one target",
                       "replacements")  # fmt: skip
        value = _source_value(entry["source"], resources, names, fail)
        for target in as_list(entry["targets"], "targets", "replacements", fail):
            if not isinstance(target, dict) or not isinstance(target.get("select"), dict):
                raise fail("target must specify resources to select", "replacements")
            options = _options(target.get("options"), fail)
            rejects = as_list(target.get("reject"), "reject", "replacements", fail)
            paths = as_list(target.get("fieldPaths"), "fieldPaths", "replacements", fail)
            for res in resources:
                if not _picked(res, target["select"], names, fail):
                    continue
                if any(_picked(res, r, names, fail) for r in rejects if isinstance(r, dict) and r):
                    continue
                for path in paths or [DEFAULT_FIELD_PATH]:
                    parts = split_path(str(path))
                    if options[2] and "*" in parts:
                        raise fail("cannot support create option in a multi-value target",
                                   "replacements")  # fmt: skip
                    slots = _slots(res, parts, options[2])
                    if not slots:
                        raise fail(f"unable to find field {path!r} in replacement target",
                                   "replacements")  # fmt: skip
                    for holder, key in slots:
                        holder[key] = _set(holder[key], value, options, fail)


def _source_value(source: Any, resources: list[dict[str, Any]], names: Mapping[int, set[str]],
                  fail: Fail) -> Any:  # fmt: skip
    if not isinstance(source, dict):
        raise fail("a replacement's source must be a mapping", "replacements")
    selector = {k: v for k, v in source.items() if k not in ("fieldPath", "options")}
    matches = [r for r in resources if _picked(r, selector, names, fail)]
    if len(matches) != 1:
        said = "multiple matches" if matches else "nothing selected"
        raise fail(f"{said} for the replacement source {selector}", "replacements")
    path = str(source.get("fieldPath") or DEFAULT_FIELD_PATH)
    slots = _slots(matches[0], split_path(path), False)
    value = slots[0][0][slots[0][1]] if slots else None
    if value is None or (isinstance(value, (str, dict, list)) and not value):
        raise fail(f"fieldPath `{path}` is missing for replacement source {selector}",
                   "replacements")  # fmt: skip
    delimiter, index, _create = _options(source.get("options"), fail)
    if delimiter:
        if isinstance(value, (dict, list)):
            raise fail("delimiter option can only be used with scalar nodes", "replacements")
        parts = _text(value).split(delimiter)
        if not 0 <= index < len(parts):
            raise fail(f"options.index {index} is out of bounds for value {_text(value)}",
                       "replacements")  # fmt: skip
        return parts[index]
    return copy.deepcopy(value)


def _picked(res: dict[str, Any], selector: Mapping[str, Any], names: Mapping[int, set[str]],
            fail: Fail) -> bool:  # fmt: skip
    """Whether ``selector`` (a kustomize ResId: group, version, kind, name, namespace,
    and equality label or annotation selectors) selects ``res``."""
    found = res.get("metadata")
    meta: dict[str, Any] = found if isinstance(found, dict) else {}
    group, _, version = str(res.get("apiVersion", "")).rpartition("/")
    have = {"group": group, "version": version, "kind": res.get("kind"),
            "namespace": meta.get("namespace") or ""}  # fmt: skip
    for key in ("group", "version", "kind", "namespace"):
        want = selector.get(key)
        if want not in (None, "") and str(want) != str(have[key] or ""):
            return False
    want_name = selector.get("name")
    known = {str(meta.get("name")), *names.get(id(res), set())}
    if want_name not in (None, "") and str(want_name) not in known:
        return False
    for key, field in (("labelSelector", "labels"), ("annotationSelector", "annotations")):
        said = selector.get(key)
        if not said:
            continue
        labels = meta.get(field)
        have_map: dict[str, Any] = labels if isinstance(labels, dict) else {}
        for term in str(said).split(","):
            k, eq, v = term.strip().partition("=")
            if not eq or k.endswith("!") or not re.fullmatch(r"[\w./-]+", k):
                raise fail(f"kvconfig selects only by equality labels, not {said!r}",
                           "replacements")  # fmt: skip
            if str(have_map.get(k.rstrip("="))) != v.lstrip("="):
                return False
    return True


def split_path(path: str) -> list[str]:
    """A field path split at its dots, not those inside ``[...]`` (kyaml's
    ``SmarterPathSplitter``)."""
    parts, depth, part = [], 0, ""
    for c in path:
        if c == "." and depth == 0:
            parts.append(part)
            part = ""
            continue
        depth += (c == "[") - (c == "]")
        part += c
    parts.append(part)
    return parts


def _slots(node: Any, parts: list[str], create: bool) -> list[tuple[Any, Any]]:
    """(holder, key) of every value ``parts`` leads to under ``node``."""
    if not parts:
        return []
    part, rest = parts[0], parts[1:]
    keys: list[Any] = []
    if isinstance(node, dict):
        if not part.startswith("[") and part != "*":  # * matches a list's elements only
            if part not in node and create:
                node[part] = _made(rest)
            keys = [part] if part in node else []
    elif isinstance(node, list):
        match = re.fullmatch(r"\[([^=\]]+)=(.*)\]", part)
        if part == "*":
            keys = list(range(len(node)))
        elif match is not None:
            field, want = match.group(1), match.group(2)
            keys = [i for i, item in enumerate(node)
                    if isinstance(item, dict) and _text(item.get(field)) == want]  # fmt: skip
            if not keys and create:
                node.append({field: want})
                keys = [len(node) - 1]
        elif re.fullmatch(r"\[?\d+\]?", part):
            index = int(part.strip("[]"))
            keys = [index] if index < len(node) else []
        elif part == "-" and create:
            node.append(_made(rest))
            keys = [len(node) - 1]
    if not rest:
        return [(node, k) for k in keys]
    return [slot for k in keys for slot in _slots(node[k], rest, create)]


def _made(rest: list[str]) -> Any:
    """What ``create`` puts where a field is missing: a list before ``[k=v]``, an index
    or ``-``, a mapping before a field, nothing at the end."""
    if not rest:
        return None
    return [] if rest[0].startswith("[") or rest[0] == "-" or rest[0].isdigit() else {}


def _text(value: Any) -> str:
    """A scalar as YAML writes it (``true``, ``8``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def _set(old: Any, value: Any, options: tuple[str, int, bool], fail: Fail) -> Any:
    """``old`` after the replacement: a scalar keeps its type and takes ``value``'s text
    (kustomize sets the node's value, not its tag), anything else becomes ``value``."""
    delimiter, index, _create = options
    if delimiter:
        if isinstance(old, (dict, list)):
            raise fail("delimiter option can only be used with scalar nodes", "replacements")
        parts = _text(old).split(delimiter)
        if index < 0:
            parts.insert(0, _text(value))
        elif index >= len(parts):
            parts.append(_text(value))
        else:
            parts[index] = _text(value)
        value = delimiter.join(parts)
    if isinstance(old, (dict, list)) or old is None or isinstance(value, (dict, list)):
        return copy.deepcopy(value)
    text = _text(value)
    if isinstance(old, bool):
        return {"true": True, "false": False}.get(text, text)
    if isinstance(old, int) and re.fullmatch(r"[-+]?\d+", text):
        return int(text)
    if isinstance(old, float) and re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", text):
        return float(text)
    return text
