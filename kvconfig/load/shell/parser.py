"""The shell grammar: tokens into lists, pipelines and compound commands (POSIX 2.9).

Reserved words (``if``, ``case``, ``for``, ``while``, ``{``, ``!`` ...) count only where
the grammar expects a command, as in a real shell; redirections were already dropped by
the lexer.
"""

from __future__ import annotations

import functools

from kvconfig.errors import InputError
from kvconfig.load.shell.lexer import _Lexer
from kvconfig.load.shell.nodes import (
    _ENDS,
    AndOr,
    ArithFor,
    Case,
    Fed,
    For,
    Function,
    Group,
    If,
    Loop,
    Node,
    Pipeline,
    Sequence,
    Simple,
)
from kvconfig.load.shell.words import _Op, _Part, _Word


def word_text(word: _Word) -> str | None:
    """The word's text when it is plain unquoted literal text (a reserved word's form)."""
    if len(word.parts) == 1 and word.parts[0].kind == "lit" and not word.parts[0].quoted:
        return word.parts[0].text
    return None


class _Parser:
    def __init__(self, tokens: list[_Word | _Op], lexer: _Lexer) -> None:
        self.tokens = tokens
        self.k = 0
        self.lexer = lexer

    def err(self, message: str, line: int) -> InputError:
        return self.lexer.err(message, line, "check the script's if/fi, do/done, case/esac")

    def peek(self) -> _Word | _Op | None:
        return self.tokens[self.k] if self.k < len(self.tokens) else None

    def line(self) -> int:
        tok = self.peek()
        return tok.line if tok is not None else (self.tokens[-1].line if self.tokens else 1)

    def is_word(self, *texts: str) -> bool:
        tok = self.peek()
        return isinstance(tok, _Word) and word_text(tok) in texts

    def is_op(self, *texts: str) -> bool:
        tok = self.peek()
        return isinstance(tok, _Op) and tok.text in texts

    def newlines(self) -> None:
        while self.is_op("\n"):
            self.k += 1

    def expect_word(self, text: str, opened: str, line: int) -> None:
        self.newlines()
        if not self.is_word(text):
            got = self.peek()
            found = "the end of the script" if got is None else repr(_show(got))
            raise self.err(f"{opened} on line {line} expects {text!r}, found {found}", line)
        self.k += 1

    def program(self) -> Sequence:
        seq = self.sequence()
        if self.peek() is not None:
            tok = self.peek()
            assert tok is not None
            raise self.err(f"unexpected {_show(tok)!r}", tok.line)
        return seq

    def sequence(self, stops: frozenset[str] = _ENDS) -> Sequence:
        seq = Sequence()
        while True:
            self.newlines()
            tok = self.peek()
            if tok is None or (isinstance(tok, _Word) and word_text(tok) in stops):
                return seq
            if isinstance(tok, _Op) and tok.text in (")", ";;"):
                return seq
            node = self.and_or()
            background = False
            if self.is_op("&"):
                background = True
                self.k += 1
            elif self.is_op(";", "\n"):
                self.k += 1
            seq.items.append((node, background))
            if not self.is_op("\n") and not background and self.tokens[self.k - 1 :][:1]:
                prev = self.tokens[self.k - 1]
                if not (isinstance(prev, _Op) and prev.text in (";", "\n", "&")):
                    tok = self.peek()
                    if tok is not None and not (
                        (isinstance(tok, _Word) and word_text(tok) in stops)
                        or (isinstance(tok, _Op) and tok.text in (")", ";;"))
                    ):
                        raise self.err(f"unexpected {_show(tok)!r}", tok.line)

    def and_or(self) -> Node:
        first = self.pipeline()
        rest: list[tuple[str, Node]] = []
        while self.is_op("&&", "||"):
            tok = self.peek()
            assert isinstance(tok, _Op)
            self.k += 1
            self.newlines()
            rest.append((tok.text, self.pipeline()))
        return AndOr(first, rest) if rest else first

    def pipeline(self) -> Node:
        line = self.line()
        negate = False
        while self.is_word("!"):
            negate = not negate
            self.k += 1
        cmds = [self.command()]
        while self.is_op("|"):
            self.k += 1
            self.newlines()
            cmds.append(self.command())
        if len(cmds) == 1 and not negate:
            return cmds[0]
        return Pipeline(cmds, negate, line)

    def command(self) -> Node:
        node = self._command()
        tok = self.peek()
        fed = None
        while isinstance(tok, _Word) and (tok.here or not tok.parts):
            # done <<< WORD: the compound's input (the last wins); ( ... ) >FILE: the
            # subshell's own redirections, which the lexer keeps as a word of none
            fed = tok if tok.here else fed
            self.k += 1
            tok = self.peek()
        return node if fed is None else Fed(node, fed)

    def _command(self) -> Node:
        tok = self.peek()
        line = self.line()
        if tok is None:
            raise self.err("the script ends where a command was expected", line)
        if isinstance(tok, _Op):
            if tok.text == "(":
                self.k += 1
                body = self.sequence()
                if not self.is_op(")"):
                    raise self.err(f"the ( on line {line} is never closed", line)
                self.k += 1
                return Group(body, True, line)
            raise self.err(f"unexpected {_show(tok)!r}", tok.line)
        text = word_text(tok)
        if text == "{":
            self.k += 1
            body = self.sequence()
            self.expect_word("}", "the {", line)
            return Group(body, False, line)
        if text == "if":
            self.k += 1
            clauses = []
            otherwise = None
            while True:
                cond = self.sequence()
                self.expect_word("then", "the if", line)
                body = self.sequence()
                clauses.append((cond, body))
                if self.is_word("elif"):
                    self.k += 1
                    continue
                if self.is_word("else"):
                    self.k += 1
                    otherwise = self.sequence()
                self.expect_word("fi", "the if", line)
                return If(clauses, otherwise, line)
        if text in ("while", "until"):
            self.k += 1
            cond = self.sequence()
            self.expect_word("do", f"the {text}", line)
            body = self.sequence()
            self.expect_word("done", f"the {text}", line)
            return Loop(cond, body, text == "until", line)
        if text == "for":
            self.k += 1
            name_tok = self.peek()
            arith = isinstance(name_tok, _Word) and name_tok.parts[0].kind == "arithfor"
            if not isinstance(name_tok, _Word) or (word_text(name_tok) is None and not arith):
                raise self.err(f"the for on line {line} names no variable", line)
            name = name_tok.parts[0].text if arith else word_text(name_tok) or ""
            self.k += 1
            words: list[_Word] | None = None
            self.newlines()
            if self.is_word("in") and not arith:
                self.k += 1
                words = []
                while isinstance(self.peek(), _Word):
                    tok2 = self.peek()
                    assert isinstance(tok2, _Word)
                    words.append(tok2)
                    self.k += 1
            if self.is_op(";", "\n"):
                self.k += 1
            self.expect_word("do", "the for", line)
            body = self.sequence()
            self.expect_word("done", "the for", line)
            return ArithFor(name, body, line) if arith else For(name, words, body, line)
        if text == "case":
            return self.case(line)
        if text == "function":
            self.k += 1
            name_tok = self.peek()
            if not isinstance(name_tok, _Word):
                raise self.err(f"the function on line {line} has no name", line)
            self.k += 1
            if self.is_op("("):
                self.k += 1
                if not self.is_op(")"):
                    raise self.err(f"the function on line {line}: expected ()", line)
                self.k += 1
            self.newlines()
            return Function(name_tok.raw(), self.command(), line)
        if text in _ENDS or text in ("in", "then"):
            raise self.err(f"unexpected {text!r}", line)
        return self.simple(line)

    def case(self, line: int) -> Case:
        self.k += 1
        word = self.peek()
        if not isinstance(word, _Word):
            raise self.err(f"the case on line {line} has no word", line)
        self.k += 1
        self.expect_word("in", "the case", line)
        items: list[tuple[list[_Word], Sequence]] = []
        while True:
            self.newlines()
            if self.is_word("esac"):
                self.k += 1
                return Case(word, items, line)
            if self.is_op("("):
                self.k += 1
            patterns: list[_Word] = []
            while True:
                pat = self.peek()
                if not isinstance(pat, _Word):
                    raise self.err(f"the case on line {line}: expected a pattern", line)
                patterns.append(pat)
                self.k += 1
                if self.is_op("|"):
                    self.k += 1
                    continue
                break
            if not self.is_op(")"):
                raise self.err(f"the case on line {line}: expected ')' after a pattern", line)
            self.k += 1
            body = self.sequence(_ENDS | {"esac"})
            items.append((patterns, body))
            self.newlines()
            if self.is_op(";;"):
                self.k += 1
                continue
            self.expect_word("esac", "the case", line)
            return Case(word, items, line)

    def simple(self, line: int) -> Node:
        words: list[_Word] = []
        if self.is_word("[["):
            opaque = False
            while self.peek() is not None and not self.is_word("]]"):
                tok = self.peek()
                if isinstance(tok, _Op):
                    if tok.text in (";", "\n", "&", "|", ";;"):
                        raise self.err(f"the [[ on line {line} is never closed", line)
                    if tok.text in ("&&", "||"):  # [[ A && B || C ]]: kept, as a marker
                        words.append(_Word([_Part(tok.text, False, "andor")], tok.line))
                    else:
                        opaque = True
                else:
                    assert tok is not None
                    words.append(tok)
                self.k += 1
            if self.peek() is None:
                raise self.err(f"the [[ on line {line} is never closed", line)
            tok = self.peek()
            assert isinstance(tok, _Word)
            words.append(tok)
            self.k += 1
            return Simple(words, line, opaque)
        while isinstance(self.peek(), _Word):
            tok = self.peek()
            assert isinstance(tok, _Word)
            words.append(tok)
            self.k += 1
            if len(words) == 1 and self.is_op("(") and word_text(tok) is not None:
                nxt = self.tokens[self.k + 1] if self.k + 1 < len(self.tokens) else None
                if isinstance(nxt, _Op) and nxt.text == ")":
                    self.k += 2
                    self.newlines()
                    return Function(word_text(tok) or "", self.command(), line)
        return Simple(words, line)


def _show(tok: _Word | _Op) -> str:
    if isinstance(tok, _Op):
        return "newline" if tok.text == "\n" else tok.text
    return tok.raw()


def parse(lexer: _Lexer) -> Sequence:
    """The script's commands; InputError for a script the shell would refuse to parse."""
    return _Parser(lexer.tokens(), lexer).program()


@functools.lru_cache(maxsize=4096)
def parse_text(text: str, source: str, line0: int | None, key: str, dialect: str) -> Sequence:
    """``parse`` of ``text`` as read at ``source`` from ``line0``: the same text met again (a
    loop's ``$(...)``, a function's ``eval``) is parsed once. The commands are read, never
    changed, by the evaluator."""
    return parse(_Lexer(text, source, line0, key, dialect))
