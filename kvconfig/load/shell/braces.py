"""bash's brace expansion of a word (the bash manual, Brace Expansion): a sequence
expression ``{x..y[..incr]}`` of integers or single letters, or a list ``{a,b,...}`` with
at least one unquoted comma (its elements may hold quoted text and expansions, carried
whole), becomes one word per element (its preamble and postscript around each), left to
right, before any other expansion. dash has none. A brace inside another one is not
expanded here: ``doubtful`` says so, and the word is then only known at run time."""

from __future__ import annotations

import itertools
import re

from kvconfig.load.shell.words import _Part, _Word

_SEQ = re.compile(r"(-?[0-9]+|[A-Za-z])\.\.(-?[0-9]+|[A-Za-z])(?:\.\.(-?[0-9]+))?")
MAX_WORDS = 1024
"""A sequence longer than this is not expanded (kvconfig keeps the word as written)."""


def _sequence(body: str) -> list[str] | None:
    m = _SEQ.fullmatch(body)
    if m is None:
        return None
    x, y, step = m.group(1), m.group(2), m.group(3)
    incr = abs(int(step)) if step else 1
    incr = incr or 1
    if x.lstrip("-").isdigit() != y.lstrip("-").isdigit():
        return None
    if x.lstrip("-").isdigit():
        a, b = int(x), int(y)
        if abs(b - a) // incr + 1 > MAX_WORDS:
            return None
        width = max(len(x), len(y)) if re.match(r"-?0[0-9]", x) or re.match(r"-?0[0-9]", y) else 0
        values = range(a, b + 1, incr) if a <= b else range(a, b - 1, -incr)
        return [f"{v:0{width}d}" if width else str(v) for v in values]
    a, b = ord(x), ord(y)
    values = range(a, b + 1, incr) if a <= b else range(a, b - 1, -incr)
    return [chr(v) for v in values]


_Atom = str | _Part
"""A character of unquoted literal text, or a whole other part (quoted text, an
expansion), which brace expansion carries through untouched."""


def _atoms(word: _Word) -> list[_Atom]:
    out: list[_Atom] = []
    for part in word.parts:
        if part.kind == "lit" and not part.quoted:
            out.extend(part.text)
        else:
            out.append(part)
    return out


def has_brace(word: _Word) -> bool:
    """Whether unquoted literal text of ``word`` holds a ``{`` (most words hold none)."""
    return any("{" in p.text for p in word.parts if p.kind == "lit" and not p.quoted)


def _word_of(atoms: list[_Atom], line: int) -> _Word:
    parts: list[_Part] = []
    text: list[str] = []
    for atom in atoms:
        if isinstance(atom, str):
            text.append(atom)
            continue
        if text:
            parts.append(_Part("".join(text), False, "lit"))
            text.clear()
        parts.append(atom)
    if text:
        parts.append(_Part("".join(text), False, "lit"))
    return _Word(parts, line)


def _items(atoms: list[_Atom]) -> tuple[int, int, list[list[_Atom]]] | None:
    """(start, end, elements) of the first brace expression: an unquoted ``{`` whose
    body up to its ``}`` holds no other brace and either an unquoted comma (the elements
    between the commas, quoted text and expansions included) or a sequence expression."""
    depth = 0
    for i, atom in enumerate(atoms):
        if atom == "}":
            depth = max(depth - 1, 0)
        if atom != "{":
            continue
        depth += 1
        if depth > 1 or (i > 0 and atoms[i - 1] == "$"):
            continue  # nested inside another brace (left to run time), or ${...}
        j = i + 1
        while j < len(atoms) and atoms[j] not in ("{", "}"):
            j += 1
        if j >= len(atoms) or atoms[j] != "}":
            continue
        body = atoms[i + 1 : j]
        if all(isinstance(a, str) for a in body):
            seq = _sequence("".join(str(a) for a in body))
            if seq is not None:
                return i, j + 1, [list(v) for v in seq]
        if "," in body:
            elements: list[list[_Atom]] = [[]]
            for a in body:
                if a == ",":
                    elements.append([])
                else:
                    elements[-1].append(a)
            return i, j + 1, elements
    return None


def expand_braces(word: _Word) -> list[_Word]:
    """The words bash makes of ``word`` by brace expansion (``[word]`` when it has none)."""
    if not has_brace(word):
        return [word]
    atoms = _atoms(word)
    found = _items(atoms)
    if found is None:
        return [word]
    start, end, elements = found
    out: list[_Word] = []
    for element in elements:
        joined = [*atoms[:start], *element, *atoms[end:]]
        if _renames(joined):
            return [word]  # bash reads the joined text anew: left to run time (doubtful)
        out.extend(expand_braces(_word_of(joined, word.line)))
        if len(out) > MAX_WORDS:
            return [word]
    return out


def _renames(atoms: list[_Atom]) -> bool:
    """Whether a ``$NAME`` now runs into a name character: bash expands braces in the
    text as written, so ``{$V,w}x`` gives ``$Vx``, another variable."""
    return any(
        isinstance(a, _Part)
        and a.kind == "param"
        and a.src.startswith("$")
        and not a.src.startswith("${")
        and isinstance(b, str)
        and (b.isalnum() or b == "_")
        for a, b in itertools.pairwise(atoms)
    )


def doubtful(word: _Word) -> bool:
    """Whether bash may still expand a brace of ``word`` that ``expand_braces`` left: one
    nested in another (``{a,{b,c}}``), one whose elements join a ``$NAME`` to the text
    after it, or one holding a quoted comma, which kvconfig leaves to run time."""
    if not has_brace(word):
        return False
    atoms = _atoms(word)
    if _items(atoms) is not None:
        return True  # one expand_braces left: its elements rename a variable
    opened = None
    for k, atom in enumerate(atoms):
        if atom == "{":
            opened = k
        elif atom == "}" and opened is not None:
            inner = atoms[opened + 1 : k]
            if any(isinstance(a, _Part) and a.quoted and "," in a.text for a in inner):
                return True  # bash counts a quoted comma there ({"c,d"..e} is c,d..e)
            opened = None
    text = "".join(p.text if p.kind == "lit" and not p.quoted else "\0" for p in word.parts)
    for m in re.finditer(r"\{", text):
        end = text.find("}", m.end())
        if end < 0:
            continue
        body = text[m.end() : end]
        if "{" in body and ("," in body or ".." in text[m.end() :]):
            return True
    return False
