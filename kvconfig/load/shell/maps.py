"""Array subscripts and bash's associative arrays (``declare -A NAME=([KEY]=VALUE ...)``,
``NAME[KEY]=VALUE``, ``${NAME[KEY]}``; the bash manual, "Arrays").

An associative array is kept as variables: the mark ``NAME[]`` (``""``; None when its keys
are only known at run time, as after a run-time branch that set it on one side only) and
one variable ``NAME[KEY]`` per element, so the branches, loops and run-time effects that
merge or forget variables treat its elements as they treat any variable. bash lists the
keys (``${!NAME[@]}``, ``${NAME[@]}``) in its hash table's order, which kvconfig does not
mirror: with more than one key, their order is left to run time; ``${#NAME[@]}`` is known.
"""

from __future__ import annotations

import re

from kvconfig.load.shell.variables import _Variables

_QUOTES = re.compile(r"[`'\"\\]|\$\(")


class _Maps(_Variables):
    def subscript(self, index: str) -> str | None:
        """An array's subscript with its ``$NAME``/``${NAME}`` expanded (bash expands the
        subscript; an indexed array's is then arithmetic); None when one is not known."""
        unknown = False

        def value(m: re.Match[str]) -> str:
            nonlocal unknown
            _is_set, text = self.lookup(m.group(1) or m.group(2))
            unknown = unknown or text is None
            return text or ""

        out = re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)", value, index)
        return None if unknown or "$" in out else out

    def is_map(self, name: str) -> bool:
        return name + "[]" in self.state.vars

    def map_key(self, index: str) -> str | None:
        """An associative array's key: the subscript expanded, one pair of quotes around
        it removed; None when some of it is only known at run time (or quoted inside)."""
        key = self.subscript(index)
        if key is not None and len(key) > 1 and key[0] == key[-1] and key[0] in "'\"":
            key = key[1:-1]
        return None if key is None or _QUOTES.search(key) else key

    def map_keys(self, name: str) -> list[str] | None:
        """Every key of the associative array ``name``, in the order they were set; None
        when they are only known at run time."""
        if self.state.vars[name + "[]"] is None:
            return None
        start = len(name) + 1
        return [k[start:-1] for k in self.state.vars if k.startswith(name + "[") and k[start:-1]]

    def map_values(self, name: str) -> list[str] | None:
        """``${NAME[@]}``: the values, when there is at most one (else in bash's hash
        order, left to run time) and each is known."""
        keys = self.map_keys(name)
        if keys is None or len(keys) > 1:
            return None
        values = [self.state.vars[f"{name}[{k}]"] for k in keys]
        return None if None in values else [v or "" for v in values]

    def map_element(self, name: str, index: str) -> tuple[str, bool, str | None] | None:
        """(its variable, whether it is set, its value) of ``${NAME[KEY]}``; None when the
        key, or whether the array holds it, is only known at run time."""
        key = self.map_key(index)
        if key is None:
            return None
        element = f"{name}[{key}]"
        if element in self.state.vars:
            return element, True, self.state.vars[element]
        return None if self.state.vars[name + "[]"] is None else (element, False, "")

    def forget_map(self, name: str) -> None:
        """Every element only known at run time (an element set by a run-time key)."""
        for k in [k for k in self.state.vars if k.startswith(name + "[")]:
            self.state.vars[k] = None
            self.state.why[k] = f"${{{name}[...]}} (set by a run-time key)"

    def drop_map(self, name: str) -> None:
        """``unset NAME`` (or a new ``declare -A NAME``): the array and every element gone."""
        for k in [k for k in self.state.vars if k.startswith(name + "[")]:
            del self.state.vars[k]
