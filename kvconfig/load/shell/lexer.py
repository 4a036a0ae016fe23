"""The shell tokenizer: quotes, escapes, expansions as written, operators and here-documents.

Words come out as parts (literal text, ``$NAME``/``${...}``, ``$(...)``, ``$((...))``),
not yet expanded (``kvconfig.load.shell.script`` expands them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kvconfig.errors import InputError


@dataclass
class _Part:
    text: str
    quoted: bool
    kind: str  # "lit", "param", "cmd", "arith", "at" ("$@" in double quotes), "array"
    src: str = ""  # the expansion as written
    words: list[_Word] = field(default_factory=list)  # the elements of NAME=(...)


@dataclass
class _Word:
    parts: list[_Part] = field(default_factory=list)
    line: int = 1

    def raw(self) -> str:
        return "".join(p.text if p.kind == "lit" else _source_form(p) for p in self.parts)


def _source_form(part: _Part) -> str:
    if part.src:
        return part.src
    if part.kind in {"param", "at"}:
        return "${" + part.text + "}"
    if part.kind == "cmd":
        return "$(" + part.text + ")"
    return "$((" + part.text + "))"


@dataclass
class _Op:
    text: str
    line: int


_OPERATORS = ("&&", "||", ";;", ";", "&", "|", "(", ")", "\n")
_WORD_ENDS = frozenset(" \t\r\n&|;()<>")
_REDIRECT = re.compile(r"(\d*)(<<<|<<-|<<|>>|>\||<>|<&|>&|&>>|&>|<|>)")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ARRAY_ASSIGN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
_SPECIAL = "@*#?$!0123456789-"


class _Lexer:
    def __init__(
        self, text: str, source: str, line0: int | None, key: str, dialect: str = "bash"
    ) -> None:
        self.dialect = dialect
        self.text = text
        self.i = 0
        self.line = 1
        self.source = source
        self.line0 = line0
        self.key = key
        self.heredocs: list[tuple[str, bool]] = []
        self.dbracket = False

    def err(self, message: str, line: int, hint: str) -> InputError:
        at = None if self.line0 is None else self.line0 + line - 1
        return InputError(message, source=self.source, line=at, key=self.key, hint=hint)

    def peek(self, n: int = 0) -> str:
        j = self.i + n
        return self.text[j] if j < len(self.text) else ""

    def tokens(self) -> list[_Word | _Op]:
        out: list[_Word | _Op] = []
        redirect_next = ""
        while self.i < len(self.text):
            c = self.text[self.i]
            if c == "\\" and self.peek(1) == "\n":
                self.i += 2
                self.line += 1
                continue
            if c in " \t\r":
                self.i += 1
                continue
            if c == "#":
                while self.i < len(self.text) and self.text[self.i] != "\n":
                    self.i += 1
                continue
            if c == "\n":
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
            m = _REDIRECT.match(self.text, self.i)
            if m and (m.group(1) == "" or self.i == 0 or self.text[self.i - 1] in " \t\n;&|("):
                op = m.group(2)
                self.i = m.end()
                if op in (">&", "<&") and re.match(r"\d+|-", self.text[self.i :]):
                    # 2>&1: the target is a descriptor, not a file
                    dm = re.match(r"\d+|-", self.text[self.i :])
                    assert dm is not None
                    self.i += dm.end()
                    continue
                redirect_next = op
                continue
            op_match = next((o for o in _OPERATORS if self.text.startswith(o, self.i)), None)
            if op_match is not None:
                out.append(_Op(op_match, self.line))
                self.i += len(op_match)
                if op_match == "\n":
                    self.line += 1
                continue
            word = self._word()
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
                if redirect_next in ("<<", "<<-"):
                    self.heredocs.append((word.raw().strip("'\""), redirect_next == "<<-"))
                redirect_next = ""
                continue
            out.append(word)
        if self.heredocs:
            raise self.err(
                f"the here-document {self.heredocs[0][0]!r} never ends",
                self.line,
                "end it with a line holding only its delimiter",
            )
        return out

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

    def _skip_heredocs(self) -> None:
        while self.heredocs:
            delimiter, strip_tabs = self.heredocs.pop(0)
            while True:
                if self.i >= len(self.text):
                    self.heredocs.insert(0, (delimiter, strip_tabs))
                    return
                end = self.text.find("\n", self.i)
                end = len(self.text) if end < 0 else end
                row = self.text[self.i : end]
                self.i = end + 1
                self.line += 1
                if (row.lstrip("\t") if strip_tabs else row) == delimiter:
                    break

    def _word(self, ends: frozenset[str] = _WORD_ENDS) -> _Word:
        word = _Word(line=self.line)
        lit: list[str] = []

        def flush(quoted: bool = False) -> None:
            if lit:
                word.parts.append(_Part("".join(lit), quoted, "lit"))
                lit.clear()

        while self.i < len(self.text):
            c = self.text[self.i]
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
            if c == '"':
                flush()
                self._double_quoted(word)
                continue
            if c == "$":
                part = self._dollar(quoted=False)
                if part is not None:
                    flush()
                    word.parts.append(part)
                    continue
            if c == "`":
                flush()
                word.parts.append(_Part(self._backtick(), False, "cmd"))
                continue
            lit.append(c)
            self.i += 1
        flush()
        return word

    def _ansi_c(self) -> str:
        """The body of bash's ``$'...'``, its backslash escapes decoded."""
        out: list[str] = []
        escapes = {
            "n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "?": "?",
            "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "v": "\v",
        }  # fmt: skip
        start_line = self.line
        while self.i < len(self.text):
            c = self.text[self.i]
            if c == "'":
                self.i += 1
                return "".join(out)
            if c == "\\" and self.peek(1):
                nxt = self.peek(1)
                m = (
                    re.compile(r"x([0-9A-Fa-f]{1,2})").match(self.text, self.i + 1)
                    or re.compile(r"([0-7]{1,3})").match(self.text, self.i + 1)
                    or re.compile(r"u([0-9A-Fa-f]{1,4})|U([0-9A-Fa-f]{1,8})").match(
                        self.text, self.i + 1
                    )
                )
                if m is not None:
                    digits = next(g for g in m.groups() if g is not None)
                    base = 8 if nxt in "01234567" else 16
                    code = int(digits, base) & (0xFF if nxt not in "uU" else 0x10FFFF)
                    self.i = m.end()
                    if code == 0:  # bash ends the string at a NUL
                        end = self.text.find("'", self.i)
                        self.i = len(self.text) if end < 0 else end
                        continue
                    out.append(chr(code))
                    continue
                out.append(escapes.get(nxt, "\\" + nxt))
                self.i += 2
                continue
            if c == "\n":
                self.line += 1
            out.append(c)
            self.i += 1
        raise self.err(
            f"unterminated quote: the $' opened on line {start_line} of the script never closes",
            start_line,
            "close the quote",
        )

    def _double_quoted(self, word: _Word, to_end: bool = False) -> None:
        """A double-quoted string into ``word`` (``to_end``: the whole text is its body)."""
        start_line = self.line
        self.i += 0 if to_end else 1
        lit: list[str] = []

        def flush() -> None:
            if lit:
                word.parts.append(_Part("".join(lit), True, "lit"))
                lit.clear()

        while self.i < len(self.text):
            c = self.text[self.i]
            if c == '"' and to_end:  # "${X-"word"}": the inner quotes nest
                flush()
                self._double_quoted(word)
                continue
            if c == '"':
                self.i += 1
                flush()
                if not word.parts or all(p.text == "" for p in word.parts):
                    word.parts.append(_Part("", True, "lit"))
                return
            if c == "\\" and self.peek(1) in ('"', "\\", "$", "`", "\n"):
                if self.peek(1) == "\n":
                    self.line += 1
                else:
                    lit.append(self.peek(1))
                self.i += 2
                continue
            if c == "$":
                part = self._dollar(quoted=True)
                if part is not None:
                    flush()
                    word.parts.append(part)
                    continue
            if c == "`":
                flush()
                word.parts.append(_Part(self._backtick(), True, "cmd"))
                continue
            if c == "\n":
                self.line += 1
            lit.append(c)
            self.i += 1
        if to_end:
            flush()
            return
        raise self.err(
            f'unterminated quote: the " opened on line {start_line} of the script never closes',
            start_line,
            "close the quote",
        )

    def _dollar(self, quoted: bool) -> _Part | None:
        start = self.i
        part = self._dollar_part(quoted)
        if part is not None:
            part.src = self.text[start : self.i]
        return part

    def _dollar_part(self, quoted: bool) -> _Part | None:
        nxt = self.peek(1)
        if self.text.startswith("$((", self.i):
            self.i += 3
            return _Part(self._until_close("((", "))", "$(("), quoted, "arith")
        if nxt == "(":
            self.i += 2
            return _Part(self._until_close("(", ")", "$("), quoted, "cmd")
        if nxt == "{":
            self.i += 2
            body = self._until_close("{", "}", "${")
            kind = "at" if quoted and body == "@" else "param"
            return _Part(body, quoted, kind)
        if nxt and nxt in _SPECIAL:
            self.i += 2
            kind = "at" if quoted and nxt == "@" else "param"
            return _Part(nxt, quoted, kind)
        m = _NAME.match(self.text, self.i + 1)
        if m:
            self.i = m.end()
            return _Part(m.group(0), quoted, "param")
        return None

    def _until_close(self, opener: str, closer: str, what: str) -> str:
        start, start_line, depth = self.i, self.line, 1
        quote = ""
        while self.i < len(self.text):
            c = self.text[self.i]
            if quote:
                if c == "\\" and quote == '"':
                    self.i += 2
                    continue
                if c == quote:
                    quote = ""
            elif c in "'\"":
                quote = c
            elif c == "\\":
                self.i += 2
                continue
            elif self.text.startswith(closer, self.i):
                depth -= 1
                if depth == 0:
                    body = self.text[start : self.i]
                    self.i += len(closer)
                    return body
            elif self.text.startswith(opener, self.i) or (opener == "{" and c == "{"):
                depth += 1
            if c == "\n":
                self.line += 1
            self.i += 1
        raise self.err(
            f"unterminated {what}: opened on line {start_line} of the script, never closed",
            start_line,
            f"close it with {closer!r}",
        )

    def _backtick(self) -> str:
        start_line = self.line
        end = self.text.find("`", self.i + 1)
        if end < 0:
            raise self.err(
                f"unterminated quote: the ` opened on line {start_line} of the script never closes",
                start_line,
                "close the backtick",
            )
        body = self.text[self.i + 1 : end]
        self.line += body.count("\n")
        self.i = end + 1
        return body


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
