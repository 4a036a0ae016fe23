"""The quoting half of the shell tokenizer: single and double quotes, bash's ``$'...'``,
``$``-expansions as written (``$NAME``, ``${...}``, ``$(...)``, ``$((...))``) and
backticks. ``_Scanner`` holds the cursor over the text; ``kvconfig.load.shell.lexer``
builds the words and operators on it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from kvconfig.errors import InputError
from kvconfig.load.shell.words import _Part, _Word

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SPECIAL = "@*#?$!0123456789-"
_DOUBLE_QUOTED_PLAIN = re.compile(r'[^"\\$`\n]+')


class _Scanner:
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
        self.heredocs: list[tuple[str, bool, _Word]] = []
        """The here-documents whose bodies come after this line: (delimiter, ``<<-``,
        the word their body becomes)."""
        self.dbracket = False

    def err(self, message: str, line: int, hint: str) -> InputError:
        at = None if self.line0 is None else self.line0 + line - 1
        return InputError(message, source=self.source, line=at, key=self.key, hint=hint)

    def peek(self, n: int = 0) -> str:
        j = self.i + n
        return self.text[j] if j < len(self.text) else ""

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

        text = self.text
        while self.i < len(text):
            run = _DOUBLE_QUOTED_PLAIN.match(text, self.i)
            if run is not None:  # characters that are only themselves in double quotes
                lit.append(run.group())
                self.i = run.end()
                continue
            c = text[self.i]
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
            if c in "$`" and self._expansion(word, flush, quoted=True):
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

    def _expansion(self, word: _Word, flush: Callable[[], None], quoted: bool) -> bool:
        """A ``$`` expansion or a backquoted command at the cursor into ``word`` (the
        literal text before it flushed first); False for a ``$`` that starts none."""
        if self.text[self.i] == "$":
            part = self._dollar(quoted=quoted)
            if part is None:
                return False
        else:
            part = _Part(self._backtick(), quoted, "cmd")
        flush()
        word.parts.append(part)
        return True

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
        parens = 0  # in $(( )): single parentheses, $(...) included, pair up first
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
            elif opener == "((" and (c == "(" or (c == ")" and parens)):
                parens += 1 if c == "(" else -1
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

    def _skip_heredocs(self) -> None:
        while self.heredocs:
            delimiter, strip_tabs, word = self.heredocs.pop(0)
            rows: list[str] = []
            while True:
                if self.i >= len(self.text):
                    self.heredocs.insert(0, (delimiter, strip_tabs, word))
                    return
                end = self.text.find("\n", self.i)
                end = len(self.text) if end < 0 else end
                row = self.text[self.i : end]
                self.i = end + 1
                self.line += 1
                row = row.lstrip("\t") if strip_tabs else row
                if row == delimiter:
                    break
                rows.append(row + "\n")
            self._here_body(word, "".join(rows))

    def _here_body(self, word: _Word, body: str) -> None:
        """A here-document's body into ``word``: as written when its delimiter is quoted,
        else with ``$``, `` ` `` and ``\\`` as in double quotes, ``"`` an ordinary
        character (POSIX 2.7.4); a body kvconfig cannot split is only known at run time."""
        if word.parts[0].quoted:
            word.parts[0].text = body
            return
        word.parts.clear()
        inner = type(self)(body.replace('"', "\0"), self.source, self.line0, self.key, self.dialect)
        try:
            inner._double_quoted(word, to_end=True)
        except InputError:
            word.parts[:] = [_Part("", True, "cmd")]  # $() of nothing: not known here
            return
        for part in word.parts:
            part.text = part.text.replace("\0", '"')
            part.src = part.src.replace("\0", '"')
