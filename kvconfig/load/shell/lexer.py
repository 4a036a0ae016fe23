"""The shell tokenizer: quotes, escapes, expansions as written, operators and here-documents.

Words come out as parts (literal text, ``$NAME``/``${...}``, ``$(...)``, ``$((...))``),
not yet expanded (``kvconfig.load.shell.script`` expands them).
"""

from __future__ import annotations

import functools
import re

from kvconfig.errors import InputError
from kvconfig.load.shell.quoting import _Scanner
from kvconfig.load.shell.words import _Op, _Part, _Word, split_holes, starts_command

_OPERATORS = ("&&", "||", ";;", ";", "&", "|", "(", ")", "\n")
_OPERATOR_STARTS = frozenset(o[0] for o in _OPERATORS)
_WORD_ENDS = frozenset(" \t\r\n&|;()<>")
_REGEX_ENDS = frozenset(" \t\r\n&;<>")
"""What ends the word after ``=~`` in ``[[ ]]``: bash reads ``(``, ``)`` and ``|`` into
it (``parse_cond_command``, ``PST_REGEXP`` in parse.y; blanks inside parentheses, also
part of it there, end it here: that test is then only known at run time)."""
_REDIRECT = re.compile(r"(\d*)(<<<|<<-|<<|>>|>\||<>|<&|>&|&>>|&>|<|>)")
_ARRAY_ASSIGN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")


class _Lexer(_Scanner):
    def tokens(self) -> list[_Word | _Op]:
        out: list[_Word | _Op] = []
        redirect_next = ""
        stdout_next = stdin_next = False
        bare = False  # a command begun with redirections and no word yet (``>LOG 2>&1 &``)
        writes: list[tuple[str, _Word]] = []  # >FILE before the command's first word
        owner: _Word | None = None  # the command's word before the >FILE being read
        script = self.text
        while self.i < len(script):
            c = script[self.i]
            if c == "\\" and self.peek(1) == "\n":
                self.i += 2
                self.line += 1
                continue
            if c in " \t\r":
                self.i += 1
                continue
            if c == "#":
                end = script.find("\n", self.i)
                self.i = len(script) if end < 0 else end
                continue
            if c == "\n":
                if bare:  # a command of redirections alone: no words, status 0
                    out.append(_Word([], self.line, writes=writes))
                    bare = stdout_next = stdin_next = False
                    writes = []
                out.append(_Op("\n", self.line))
                self.i += 1
                self.line += 1
                if self.heredocs:
                    self._skip_heredocs()
                continue
            if self.dbracket and c in "<>":
                out.append(_Op(c, self.line))
                self.i += 1
                continue
            m = (
                _REDIRECT.match(script, self.i)
                if (c in "<>&" or c.isdigit()) and not self._at_substitution()
                else None
            )
            if m and (m.group(1) == "" or self.i == 0 or self.text[self.i - 1] in " \t\n;&|("):
                bare = bare or not out or isinstance(out[-1], _Op) or _opens(out[-1])
                op = m.group(2)
                self.i = m.end()
                to_file = op in ("&>", "&>>") or (
                    m.group(1) in ("", "1") and op in (">", ">>", ">|")
                )
                owner = out[-1] if to_file and not bare and isinstance(out[-1], _Word) else None
                if (m.group(1) in ("", "1") and op[:1] == ">") or op[:1] == "&":
                    # >FILE, >&2, &>FILE: the command's output goes elsewhere
                    if out and isinstance(out[-1], _Word):
                        out[-1].stdout = True
                    else:
                        stdout_next = True
                if m.group(1) in ("", "0") and op in ("<", "<>", "<&"):
                    # <FILE, <&3: the command's input comes from elsewhere
                    if out and isinstance(out[-1], _Word):
                        out[-1].stdin = True
                    else:
                        stdin_next = True
                if op in (">&", "<&") and re.match(r"\d+|-", self.text[self.i :]):
                    # 2>&1: the target is a descriptor, not a file
                    dm = re.match(r"\d+|-", self.text[self.i :])
                    assert dm is not None
                    self.i += dm.end()
                    continue
                redirect_next = op if op != "<<<" or m.group(1) in ("", "0") else "<"
                redirect_next = "+" + redirect_next if to_file else redirect_next
                continue
            if (
                self.dialect == "bash"
                and self.text.startswith("((", self.i)
                and out
                and isinstance(out[-1], _Word)
                and out[-1].raw() == "for"
                and len(out[-1].parts) == 1
                and not out[-1].parts[0].quoted
            ):
                out.append(self._arith_for())
                continue
            if (
                self.dialect == "bash"
                and self.text.startswith("((", self.i)
                and starts_command(out)
            ):
                arithmetic = self._arith_command()
                if arithmetic is not None:
                    out.append(arithmetic)
                    continue
            after = out[-1] if self.dbracket and out else None
            if isinstance(after, _Word) and after.raw() == "=~" and c not in _REGEX_ENDS:
                out.append(self._word(_REGEX_ENDS))
                continue
            op_match = (
                next((o for o in _OPERATORS if script.startswith(o, self.i)), None)
                if c in _OPERATOR_STARTS
                else None
            )
            if op_match is not None:
                if bare and not redirect_next:
                    out.append(_Word([], self.line, writes=writes))
                    bare = stdout_next = stdin_next = False
                    writes = []
                out.append(_Op(op_match, self.line))
                self.i += len(op_match)
                if op_match == "\n":
                    self.line += 1
                continue
            word = self._substitution() if c in "<>" and self._at_substitution() else self._word()
            if (
                self.dialect == "bash"
                and self.peek() == "("
                and len(word.parts) == 1
                and not word.parts[0].quoted
                and _ARRAY_ASSIGN.fullmatch(word.parts[0].text)
            ):
                word.parts.append(self._array())
            text = word.raw() if len(word.parts) == 1 and not word.parts[0].quoted else ""
            if text == "[[" and self.dialect == "bash" and not redirect_next:
                self.dbracket = True
            elif text == "]]":
                self.dbracket = False
            if redirect_next:
                if redirect_next in ("<<", "<<-"):  # the body is read after this line
                    body = _Word(line=word.line, here=True, doc=True)
                    body.parts.append(_Part("", any(p.quoted for p in word.parts), "lit"))
                    self.heredocs.append((word.raw(), redirect_next == "<<-", body))
                    out.append(body)
                here = redirect_next == "<<<"
                if redirect_next[0] == "+":  # >FILE: kept for the files the script writes
                    (owner.writes if owner is not None else writes).append(
                        (redirect_next[1:], word)
                    )
                redirect_next = ""
                if here:  # kept: read takes its words from it
                    word.here = True
                    out.append(word)
                continue
            word.stdout = word.stdout or stdout_next
            word.stdin = word.stdin or stdin_next
            word.writes[:0], writes = writes, []
            stdout_next = stdin_next = bare = False
            out.append(word)
        if bare:
            out.append(_Word([], self.line, writes=writes))
        if self.heredocs:
            raise self.err(
                f"the here-document {self.heredocs[0][0]!r} never ends",
                self.line,
                "end it with a line holding only its delimiter",
            )
        if "\ue000" in self.text:  # an eval'd text with run-time parts
            for token in out:
                if isinstance(token, _Word):
                    split_holes(token)
        return out

    def _at_substitution(self) -> bool:
        """bash's process substitution ``<(LIST)`` or ``>(LIST)`` starts a word here (dash
        has none: there ``>`` is a redirection and ``(`` a syntax error)."""
        return (
            self.dialect == "bash"
            and self.text.startswith(("<(", ">("), self.i)
            and (self.i == 0 or self.text[self.i - 1] in " \t\n;&|(")
        )

    def _substitution(self) -> _Word:
        """A word starting with a process substitution: part kind ``procsub``, a file name
        (``/dev/fd/N``) only known at run time; LIST runs beside the command, like a
        command substitution's commands it is not read (bash's manual, "Process
        Substitution")."""
        line, start = self.line, self.i
        self.i += 2
        inner = self._until_close("(", ")", self.text[start : start + 2])
        part = _Part(inner, False, "procsub", self.text[start : self.i])
        word = self._word()
        word.parts.insert(0, part)
        word.line = line
        return word

    def _arith_command(self) -> _Word | None:
        """bash's ``(( expression ))`` command: a word of part kind ``arithcmd`` holding
        the expression. None (two subshells, as bash reads them when the text is no
        arithmetic) when no ``))`` closes it or it holds a ``;`` or a newline."""
        start, line = self.i, self.line
        try:
            inner = self._arith_for().parts[0].text
        except InputError:  # no )) closes it
            inner = None
        if inner is None or ";" in inner or "\n" in inner:
            self.i, self.line = start, line
            return None
        return _Word([_Part(inner, True, "arithcmd", "((" + inner + "))")], line)

    def _arith_for(self) -> _Word:
        """bash's ``for (( init; test; step ))``: the text between the parentheses, kept
        whole as one word (part kind ``arithfor``) for the parser."""
        line = self.line
        depth = 0
        j = self.i + 2
        while j < len(self.text):
            c = self.text[j]
            if c == "(":
                depth += 1
            elif c == ")":
                if depth == 0 and self.text.startswith("))", j):
                    inner = self.text[self.i + 2 : j]
                    self.line += inner.count("\n")
                    self.i = j + 2
                    return _Word([_Part(inner, True, "arithfor", "((" + inner + "))")], line)
                depth -= 1
            j += 1
        raise self.err(f"the for (( on line {line} is never closed", line, "close it with ))")

    def _array(self) -> _Part:
        """The elements of ``NAME=( ... )`` (bash), the ``(`` under the cursor."""
        start_line = self.line
        self.i += 1
        part = _Part("", False, "array")
        while self.i < len(self.text):
            c = self.text[self.i]
            if c in " \t\r\n":
                self.line += c == "\n"
                self.i += 1
            elif c == "\\" and self.peek(1) == "\n":
                self.i += 2
                self.line += 1
            elif c == "#":
                while self.i < len(self.text) and self.text[self.i] != "\n":
                    self.i += 1
            elif c == ")":
                self.i += 1
                return part
            elif c in "&|;(<>":
                break
            else:
                part.words.append(self._word())
        raise self.err(
            f"unterminated array: the ( opened on line {start_line} of the script never closes",
            start_line,
            "close it with )",
        )

    def _word(self, ends: frozenset[str] = _WORD_ENDS) -> _Word:
        word = _Word(line=self.line)
        lit: list[str] = []

        def flush(quoted: bool = False) -> None:
            if lit:
                word.parts.append(_Part("".join(lit), quoted, "lit"))
                lit.clear()

        text, plain = self.text, _plain_run(ends)
        while self.i < len(text):
            run = plain.match(text, self.i)
            if run is not None:  # characters that are only themselves here
                lit.append(run.group())
                self.i = run.end()
                continue
            c = text[self.i]
            if c in ends:
                break
            if c == "\\":
                nxt = self.peek(1)
                if nxt == "\n":
                    self.i += 2
                    self.line += 1
                    continue
                flush()
                word.parts.append(_Part(nxt, True, "lit"))
                self.i += 2
                continue
            if c == "'":
                flush()
                start_line = self.line
                end = self.text.find("'", self.i + 1)
                if end < 0:
                    raise self.err(
                        f"unterminated quote: the ' opened on line {start_line} of the "
                        "script never closes",
                        start_line,
                        "close the quote",
                    )
                body = self.text[self.i + 1 : end]
                self.line += body.count("\n")
                word.parts.append(_Part(body, True, "lit"))
                self.i = end + 1
                continue
            if c == "$" and self.peek(1) == "'" and self.dialect == "bash":
                flush()
                self.i += 2
                word.parts.append(_Part(self._ansi_c(), True, "lit"))
                continue
            if c == "$" and self.peek(1) == '"' and self.dialect == "bash":
                # bash's $"..." is the string translated for the locale: in the C locale
                # (and any without a catalogue for the script), the string as it stands
                flush()
                self.i += 1
                self._double_quoted(word)
                continue
            if c == '"':
                flush()
                self._double_quoted(word)
                continue
            if c in "$`" and self._expansion(word, flush, quoted=False):
                continue
            lit.append(c)
            self.i += 1
        flush()
        return word


@functools.cache
def _plain_run(ends: frozenset[str]) -> re.Pattern[str]:
    """A run of characters that stand for themselves in a word ended by ``ends``: no
    quote, escape, ``$`` or backquote."""
    special = "".join(sorted(ends | frozenset("\\'\"$`")))
    return re.compile(f"[^{re.escape(special)}]+")


def split_words(
    text: str, *, source: str = "", line: int | None = None, key: str = ""
) -> list[str]:
    """A command line split into words by shell quoting rules, nothing expanded."""
    lexer = _Lexer(text, source, line, key)
    out: list[str] = []
    for token in lexer.tokens():
        if isinstance(token, _Word):
            out.append(token.raw())
        elif token.text != "\n":
            out.append(token.text)
    return out


def _opens(word: _Word) -> bool:
    """Whether a word is a reserved word after which a command starts (``then``, ``do``)."""
    return (
        len(word.parts) == 1
        and not word.parts[0].quoted
        and word.parts[0].kind == "lit"
        and word.parts[0].text in ("then", "do", "else", "{", "!", "if", "while", "until")
    )
