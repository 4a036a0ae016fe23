"""The variables a function may set, read from its text: what a call kvconfig does not follow
(nested deeper than ``MAX_EVAL_DEPTH``, e.g. a function that calls itself on a run-time
list of process ids) leaves to run time, instead of every variable.

A function sets a variable by an assignment (``X=v``, ``X+=v``, ``X=(...)``), ``export``,
``readonly``, ``declare``/``typeset``/``local`` with a name, ``unset``, ``read``,
``mapfile``/``readarray``, ``printf -v``, ``getopts`` (its name, ``OPTARG``, ``OPTIND``), a
``for`` loop, ``${X:=v}`` and ``${X=v}``, an arithmetic assignment (``$((X+=1))``,
``((X++))``), ``cd`` (``PWD``, ``OLDPWD``), and through the functions it calls. ``eval``,
``source``/``.``, ``let``, a command whose name is only known at run time (it may be a
function) and a name given by an expansion (``read "$V"``) may set any variable: then
there is no list (None), and the caller treats the call as it treats any opaque command.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from kvconfig.errors import AnyVariable
from kvconfig.load.shell import nodes as N
from kvconfig.load.shell.words import _Word, assignment, element_assignment

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DEFAULTING = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*):?=")
_ARITH_SET = re.compile(
    r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:(?:[-+*/%&|^]|<<|>>)?=(?!=)|\+\+|--)"
    r"|(?:\+\+|--)\s*([A-Za-z_][A-Za-z0-9_]*)"
)
_READ_VALUED = frozenset({"-p", "-t", "-d", "-n", "-N", "-u", "-i"})
"""``read`` options whose value is the next word (bash's ``read``)."""
_OPAQUE = frozenset({"eval", "source", ".", "let", "trap", "exec"})
_DECLARING = frozenset({"export", "readonly", "declare", "typeset", "local", "unset"})


def assigned(name: str, functions: Mapping[str, N.Node]) -> frozenset[str] | None:
    """The variables a call of the function ``name`` may set; None when it may set any."""
    found: set[str] = set()
    try:
        _function(name, functions, found, set())
    except AnyVariable:
        return None
    return frozenset(found)


def _function(name: str, functions: Mapping[str, N.Node], found: set[str], seen: set[str]) -> None:
    if name in seen:
        return
    seen.add(name)
    _node(functions[name], functions, found, seen)


def _node(node: N.Node, functions: Mapping[str, N.Node], found: set[str], seen: set[str]) -> None:
    if isinstance(node, N.Simple):
        if node.opaque:
            return  # a [[ ]] test: it sets nothing
        _simple(node.words, functions, found, seen)
        return
    if isinstance(node, N.For):
        found.add(node.name)
        for word in node.words or []:
            _word(word, found)
    if isinstance(node, N.ArithFor):
        _arith(node.expression, found)
    if isinstance(node, N.Case):
        _word(node.word, found)
    if isinstance(node, N.Function):
        raise AnyVariable  # it defines a function: what later calls do is not this text's
    for child in _children(node):
        _node(child, functions, found, seen)


def _children(node: N.Node) -> list[N.Node]:
    if isinstance(node, N.Pipeline):
        return list(node.commands)
    if isinstance(node, N.AndOr):
        return [node.first, *(n for _, n in node.rest)]
    if isinstance(node, N.Sequence):
        return [n for n, _ in node.items]
    if isinstance(node, N.If):
        out: list[N.Node] = [n for pair in node.clauses for n in pair]
        return out + ([node.otherwise] if node.otherwise else [])
    if isinstance(node, N.Loop):
        return [node.condition, node.body]
    if isinstance(node, (N.For, N.ArithFor, N.Group)):
        return [node.body]
    if isinstance(node, N.Case):
        return [body for _, body in node.items]
    if isinstance(node, N.Fed):
        return [node.body]
    return []


def _simple(
    words: list[_Word], functions: Mapping[str, N.Node], found: set[str], seen: set[str]
) -> None:
    rest = [w for w in words if not w.here]
    for word in rest:
        _word(word, found)
    while rest and (given := assignment(rest[0]) or element_assignment(rest[0])) and given[0]:
        found.add(given[0])
        rest.pop(0)
    if not rest:
        return
    head = _literal(rest[0])
    if head is None:
        if rest[0].parts and rest[0].parts[0].kind == "arithcmd":
            _arith(rest[0].parts[0].text, found)
            return
        raise AnyVariable  # a command named at run time may be a function
    if head in _OPAQUE:
        raise AnyVariable
    if head in functions:
        _function(head, functions, found, seen)
    elif head in _DECLARING or head in ("read", "mapfile", "readarray", "getopts", "printf"):
        _names(head, rest[1:], found)
    elif head in ("cd", "pushd", "popd"):
        found.update(("PWD", "OLDPWD"))


def _names(head: str, words: list[_Word], found: set[str]) -> None:
    """The names ``export``/``read``/``getopts``... set (an assignment's name is its
    literal text before ``=``)."""
    args = [_literal(w) for w in words]
    if head == "printf":
        if args[:1] == ["-v"]:
            _add(args[1] if len(args) > 1 else None, found)
        return
    if head == "getopts":
        found.update(("OPTARG", "OPTIND"))
        _add(args[1] if len(args) > 1 else None, found)
        return
    if head in ("mapfile", "readarray") and not any(a and _NAME.fullmatch(a) for a in args):
        found.add("MAPFILE")
    skip = False
    for word, arg in zip(words, args, strict=True):
        if skip:
            skip = False
            continue
        given = assignment(word)
        if given is not None:
            found.add(given[0])
        elif arg is None:
            raise AnyVariable
        elif arg.startswith(("-", "+")):
            skip = head == "read" and arg in _READ_VALUED
        else:
            _add(arg.partition("[")[0], found)


def _add(name: str | None, found: set[str]) -> None:
    if name is None or not _NAME.fullmatch(name):
        raise AnyVariable
    found.add(name)


def _literal(word: _Word) -> str | None:
    """A word's text when it holds no expansion."""
    if all(p.kind == "lit" for p in word.parts):
        return "".join(p.text for p in word.parts)
    return None


def _word(word: _Word, found: set[str]) -> None:
    """``${X:=v}``/``${X=v}`` and ``$((X=1))`` in a word."""
    for part in word.parts:
        if part.kind == "param" and (m := _DEFAULTING.match(part.text)):
            found.add(m.group(1))
        elif part.kind in ("arith", "arithcmd"):
            _arith(part.text, found)
        for inner in part.words:
            _word(inner, found)


def _arith(text: str, found: set[str]) -> None:
    for m in _ARITH_SET.finditer(text):
        found.add(m.group(1) or m.group(2))
