"""Word expansion with field splitting: a word becomes its fields as the shell splits them
(``IFS``, ``"$@"``, arrays, unquoted ``${X:-word}``, globs); a word with anything only
known at run time stays one field, as written.
"""

from __future__ import annotations

import re

from kvconfig.load.shell.arith import arith
from kvconfig.load.shell.braces import doubtful, expand_braces, has_brace
from kvconfig.load.shell.globs import _has_glob
from kvconfig.load.shell.params import _Params
from kvconfig.load.shell.words import (
    HOLE,
    _source_form,
    _Word,
    element_assignment,
    hole,
    holes_named,
    one_field,
)

_WORD_DEFAULT = re.compile(
    r"^([A-Za-z_][A-Za-z0-9_]*(?:\[[@*]\])?|[0-9@*#?$!-])(:?)([-+])(.*)$", re.S
)


_EXPANDS = re.compile(r"^~|[{*?\[]")
"""What in a word of unquoted text alone may expand: a leading ``~``, a ``{`` (bash's
braces), a pattern character."""


class _Fields(_Params):
    def assign_array(self, name: str, elements: list[_Word], append: bool) -> None:
        """``NAME=(...)``/``NAME+=(...)``: each element's fields. An element that stays one
        field whatever its run-time parts hold (``"--model=$M"``) keeps its known text with
        those parts marked (``kvconfig.load.shell.words.hole``), so ``"${NAME[@]}"`` in a
        command gives each element its own word; any other run-time element is None (it
        may be any number of fields, so the array's length is only known at run time).
        An associative array's ``NAME=([KEY]=VALUE ...)`` sets its elements by key."""
        if self.is_map(name):
            self.assign_map(name, True, (elements, append))
            return
        values: list[str | None] = []
        for w in elements:
            fields, unknown = self.expand_word(w)
            if not unknown:
                values.extend(fields)
                continue
            texts = self.expand_template(w) if len(fields) == 1 and one_field(w) else ()
            values.append(texts[0] if len(texts) == 1 else None)
        old = self.state.arrays.get(name, []) if append else []
        self.set_array(name, [*old, *values])

    def set_array(self, name: str, values: list[str | None]) -> None:
        self.state.arrays[name] = values
        first = values[0] if values else ""
        if first is not None and HOLE.search(first):
            self.state.why[name] = holes_named(first)[1] or "$" + name
            first = None
        self.state.vars[name] = first

    def assign_map(self, name: str, given: bool, elements: tuple[list[_Word], bool] | None) -> None:
        """``declare -A NAME`` and ``declare -A NAME=([KEY]=VALUE ...)`` (bash, outside a
        function; ``kvconfig.load.shell.maps``); ``NAME=VALUE`` or an element kvconfig
        cannot take apart leaves the keys to run time."""
        if not given and self.is_map(name):
            return  # declare -A NAME again: the array as it is
        if elements is None or not elements[1]:
            self.drop_map(name)
            self.state.arrays.pop(name, None)
            self.state.vars.pop(name, None)
        self.state.vars[name + "[]"] = "" if not given or elements is not None else None
        for word in elements[0] if elements else ():
            found = element_assignment(word)
            if found is None or found[0]:
                self.forget_map(name)
                continue
            self.assign_element(name, *found[1:])

    def assign_element(self, name: str, sub: _Word, append: bool, value_word: _Word) -> None:
        """bash's ``NAME[SUB]=value`` (``+=``: appended to the element): an associative
        array's element by its key, an indexed array's by the subscript's arithmetic; one
        kvconfig cannot place (a run-time subscript, a gap in an indexed array) leaves the
        array to run time."""
        if name in self.state.readonly:
            self.state.status = 1
            return
        value, what = self.expand_string(value_word)
        key, _ = self.expand_string(sub)  # the key: expanded, quotes removed, not split
        if self.is_map(name):
            if key is None:
                self.forget_map(name)
                return
            element = f"{name}[{key}]"
            old = self.state.vars.get(element, "") if append else ""
            self.assign(element, None if value is None or old is None else old + value, what)
            return
        values = self.state.arrays.get(name)
        if values is None:
            is_set, scalar = self.lookup(name)
            values = [scalar] if is_set else []
        try:
            k = None if key is None else arith(key, self.arith_var)
        except ValueError:
            k = None
        k = k + len(values) if k is not None and k < 0 else k
        if k is None or None in values or not 0 <= k <= len(values):
            self.set_array(name, [None])
            self.state.why[name] = what or f"${{{name}[{sub.raw()}]}}"
            return
        old_value = values[k] if append and k < len(values) else ""
        if value is None or old_value is None:
            texts = self.expand_template(value_word)
            value = (old_value or "") + texts[0] if len(texts) == 1 else hole(what)
        else:
            value = old_value + value
        self.set_array(name, [*values[:k], value, *values[k + 1 :]])

    def unset(self, name: str) -> None:
        """``unset NAME``, and bash's ``unset 'NAME[SUB]'``."""
        base, _, sub = name.partition("[")
        if sub and self.is_map(base):
            key = self.map_key(sub[:-1])
            if key:
                self.state.vars.pop(f"{base}[{key}]", None)
            else:
                self.forget_map(base)
        elif sub:
            self.set_array(base, [None])  # a gap: which elements are left is not followed
        else:
            self.drop_map(name)
            self.state.vars.pop(name, None)
            self.state.arrays.pop(name, None)
            self.state.exported.discard(name)
            self.state.maybe_exported.discard(name)

    def expand_word(self, word: _Word) -> tuple[list[str], list[str]]:
        """The fields of a word, and what in it was unknown (then one field, as written);
        in bash, after brace expansion (``kvconfig.load.shell.braces``)."""
        if len(word.parts) == 1 and word.parts[0].kind == "lit":  # most words: text alone
            text = word.parts[0].text
            if word.parts[0].quoted:
                return [text], []
            if not _EXPANDS.search(text):  # no tilde, brace or pattern to expand
                return [text] if text else [], []
        if self.dialect == "bash" and has_brace(word):
            words = expand_braces(word)
            if any(doubtful(w) for w in words):
                return [word.raw()], [word.raw()]
            if len(words) > 1:
                fields: list[str] = []
                unknown: list[str] = []
                for w in words:
                    more, missing = self.expand_one(w)
                    fields += more
                    unknown += missing
                return fields, unknown
        return self.expand_one(word)

    def lookup_all(self, name: str) -> tuple[bool, str | None]:
        """``lookup``, and for bash's ``A[@]``/``A[*]`` the array's elements: set when it
        has one (``${A[@]+"${A[@]}"}`` is nothing for an empty array)."""
        if not name.endswith("]"):
            return self.lookup(name)
        base = name[:-3]
        if self.dialect != "bash":
            return True, None
        values = self.state.arrays.get(base)
        if values is None:
            is_set, scalar = self.lookup(base)
            values = [scalar] if is_set else []
        if any(v is None for v in values):
            return True, None
        return bool(values), " ".join(v or "" for v in values)

    def expand_one(self, word: _Word) -> tuple[list[str], list[str]]:
        """The fields of a word after brace expansion."""
        fields: list[str] = []
        cur: str | None = None
        unknown: list[str] = []
        glob = False
        ifs = self.ifs()

        def split(value: str) -> None:
            nonlocal cur
            cur = split_into(value, ifs, fields, cur)

        parts = list(word.parts)
        spliced: set[int] = set()  # the parts of an unquoted ${X:-word}'s word
        k = -1
        while k + 1 < len(parts):
            k += 1
            part = parts[k]
            if part.kind == "array":
                unknown.append("(...)")
                continue
            mm = _WORD_DEFAULT.match(part.text) if part.kind == "param" else None
            if mm is not None and not part.quoted:
                # ${X:-word} unquoted: the word's own quotes decide how it splits
                is_set, value = self.lookup_all(mm.group(1))
                if value is not None:
                    present = is_set and (not mm.group(2) or bool(value))
                    if present == (mm.group(3) == "+"):
                        inner = self.lexer(mm.group(4))._word(frozenset()).parts
                        spliced.update(id(p) for p in inner)
                        parts[k + 1 : k + 1] = inner
                        continue
                    if mm.group(3) == "+":
                        continue
            if part.kind in ("param", "at") and part.quoted:
                value, _what, many = self.param(part.text, True)
                args = self.state.args
                if many is None and self.holes_ok and part.kind == "at" and args is not None:
                    # "$@" in a command's words: each argument one field, those only known
                    # at run time as holes (kvconfig.load.shell.simple takes them apart)
                    value, many = "", list(args[1:])
                if many is not None:
                    if many:
                        cur = (cur or "") + many[0]
                        for item in many[1:]:
                            fields.append(cur)
                            cur = item
                    continue
                if value is None:
                    unknown.append(_source_form(part))
                    continue
                cur = (cur or "") + value
                continue
            if part.kind == "lit":
                if part.quoted:
                    cur = (cur or "") + part.text
                    continue
                text = part.text
                if k == 0 and text.startswith("~"):
                    value, _what = self.tilde(text)
                    if value is None:
                        unknown.append(text.partition("/")[0])
                        continue
                    cur = (cur or "") + value
                    continue
                if _has_glob(text):
                    glob = True
                if id(part) in spliced:  # the expansion's result: split at IFS (POSIX 2.6.5)
                    split(text)
                elif text:
                    cur = (cur or "") + text
                continue
            if part.kind == "param" and re.fullmatch(
                r"[@*]|!?[A-Za-z_][A-Za-z0-9_]*\[[@*]\]", part.text
            ):
                _, _what, many = self.param(part.text.replace("*", "@"), True)
                if many is None:
                    unknown.append(_source_form(part))
                    continue
                for n, item in enumerate(many):
                    if n > 0 and cur is not None:
                        fields.append(cur)
                        cur = None
                    if _has_glob(item):
                        glob = True
                    split(item)
                continue
            value, _what = self.part_value(part, tilde=False)
            if value is None:
                unknown.append(_source_form(part))
                continue
            if part.quoted:
                cur = (cur or "") + value
                continue
            if _has_glob(value):
                glob = True
            split(value)
        if cur is not None:
            fields.append(cur)
        if not unknown and glob and any(_has_glob(f) for f in fields):
            unknown.append(word.raw())
        if unknown:
            return [word.raw()], unknown
        return fields, []


def split_into(value: str, ifs: str, fields: list[str], cur: str | None = None) -> str | None:
    """Split ``value`` by ``ifs`` as the shell splits an expansion: runs of IFS white
    space separate fields and are trimmed at the ends, each other IFS character ends a
    field (an empty one between two of them). ``cur`` is the field open before it (text
    of the same word); the fields it ends go to ``fields``, and the field left open is
    returned (None: none)."""
    if not ifs:
        return (cur or "") + value if value else cur
    ws = "".join(c for c in ifs if c in " \t\n")
    nws = "".join(c for c in ifs if c not in " \t\n")
    parts = [f"[{re.escape(ws)}]+"] if ws else []
    if nws:
        around = f"[{re.escape(ws)}]*" if ws else ""
        parts.insert(0, f"{around}[{re.escape(nws)}]{around}")
    delim = re.compile("|".join(parts))
    pieces, delims = delim.split(value), delim.findall(value)
    for k, piece in enumerate(pieces):
        if k > 0 and cur is not None:
            fields.append(cur)
            cur = None
        if piece:
            cur = (cur or "") + piece
        elif k < len(delims) and any(c in nws for c in delims[k]):
            cur = cur or ""
    return cur


def split_value(value: str, ifs: str) -> list[str]:
    """``value``'s fields split by ``ifs`` (a last non-white IFS character ends the last
    field, adding none)."""
    fields: list[str] = []
    cur = split_into(value, ifs, fields)
    return [*fields, cur] if cur is not None else fields
