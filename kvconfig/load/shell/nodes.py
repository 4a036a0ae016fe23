"""The shell grammar's nodes: what the parser (``kvconfig.load.shell.parser``) makes of a
script, a simple command, a pipeline, an and-or list, a sequence and the compound
commands."""

from __future__ import annotations

from dataclasses import dataclass, field

from kvconfig.load.shell.words import _Word


@dataclass
class Simple:
    """A simple command: its words (assignments first) as written."""

    words: list[_Word]
    line: int
    opaque: bool | str = False
    """A bash ``[[ ]]`` holding operators kvconfig does not evaluate (a text: another
    test only known at run time, named so)."""
    plain: list[_Word] = field(init=False, repr=False, compare=False)
    """The words but here-strings and here-documents (what the command is run with)."""
    here: list[_Word] = field(init=False, repr=False, compare=False)
    """The here-strings' and here-documents' words (its input)."""
    andor: bool = field(init=False, repr=False, compare=False)
    """A bash ``[[ A && B ]]``."""

    def __post_init__(self) -> None:  # the words are read, never changed, once parsed
        self.plain = [w for w in self.words if not w.here]
        self.here = [w for w in self.words if w.here]
        self.andor = any(w.parts and w.parts[0].kind == "andor" for w in self.plain)


@dataclass
class Pipeline:
    """``a | b | c`` (``!`` negates the status)."""

    commands: list[Node]
    negate: bool
    line: int


@dataclass
class AndOr:
    """``a && b || c``: the first pipeline, then (operator, pipeline) pairs."""

    first: Node
    rest: list[tuple[str, Node]]


@dataclass
class Sequence:
    """Commands run in turn; ``background`` marks the ones ended by ``&``."""

    items: list[tuple[Node, bool]] = field(default_factory=list)


@dataclass
class If:
    """``if c; then b; elif c; then b; else b; fi``."""

    clauses: list[tuple[Sequence, Sequence]]
    otherwise: Sequence | None
    line: int


@dataclass
class Loop:
    """``while c; do b; done`` (``until`` when ``until``)."""

    condition: Sequence
    body: Sequence
    until: bool
    line: int


@dataclass
class For:
    """``for name in words; do body; done`` (``words`` None: the positional parameters)."""

    name: str
    words: list[_Word] | None
    body: Sequence
    line: int


@dataclass
class ArithFor:
    """bash's ``for (( init; test; step )); do body; done``."""

    expression: str
    body: Sequence
    line: int


@dataclass
class Case:
    """``case word in p1|p2) body ;; esac``."""

    word: _Word
    items: list[tuple[list[_Word], Sequence]]
    line: int


@dataclass
class Group:
    """``{ body; }``, or ``( body )`` when ``subshell``."""

    body: Sequence
    subshell: bool
    line: int


@dataclass
class Function:
    """``name() body`` (or bash's ``function name body``)."""

    name: str
    body: Node
    line: int


@dataclass
class Fed:
    """A compound command whose input is a here-string or here-document
    (``while read ...; done <<< WORD``)."""

    body: Node
    word: _Word


Node = (
    Simple | Pipeline | AndOr | Sequence | If | Loop | For | ArithFor | Case | Group | Function
) | Fed

_RESERVED = frozenset(
    {"if", "then", "else", "elif", "fi", "do", "done", "case", "esac", "while", "until", "for"}
    | {"{", "}", "!", "in", "function", "[[", "]]"}
)
_ENDS = frozenset({"then", "else", "elif", "fi", "do", "done", "esac", "}"})
