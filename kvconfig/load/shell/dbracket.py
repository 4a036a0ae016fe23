"""Bash's ``[[ ]]``: a pattern match (``==``, ``!=``), a regular expression (``=~``,
``BASH_REMATCH``), ``&&`` and ``||`` between tests, and the program a run-time command
word names; the part of the evaluator ``_Shell`` (``kvconfig.load.shell.simple``) builds
on."""

from __future__ import annotations

from kvconfig.load.shell.conditions import _test
from kvconfig.load.shell.regex import regex_match
from kvconfig.load.shell.state import path_program
from kvconfig.load.shell.traps import _Traps
from kvconfig.load.shell.words import _source_form, _Word


class _Tests(_Traps):
    def pattern_test(self, args: list[_Word]) -> int | str | None:
        """``[[ WORD == PATTERN ]]`` (``=``, ``!=``, a leading ``!``): bash matches the
        expanded left word against the right one as a pattern, its quoted parts literal,
        with no field splitting or globbing of either (bash manual, "Conditional
        Constructs"; ``cond_command`` in bash's execute_cmd.c). "other" for any other test;
        None when a word is only known at run time."""
        negate = len(args) == 4 and args[0].raw() == "!"
        if negate:
            args = args[1:]
        if len(args) == 3 and args[1].raw() == "=~":
            status = self.regex_test(args[0], args[2])
            return status if status is None or status == 2 else int((status == 0) == negate)
        if len(args) != 3 or args[1].raw() not in ("==", "=", "!="):
            return "other"
        left, right = args[0], args[2]
        if any(x in right.raw() for x in ("?(", "*(", "+(", "@(", "!(")):
            return "other"  # an extended pattern: bash's extglob forms stay run-time
        if self.state.nocase:  # shopt nocasematch may be on: case-insensitive matching
            self.last_unknown = "a [[ ]] match under shopt nocasematch"
            return None
        subject, what = self.expand_string(left)
        regex = self.pattern(right)
        if subject is None or regex is None:
            self.last_unknown = what if subject is None else right.raw()
            return None
        hit = regex.fullmatch(subject) is not None
        if args[1].raw() == "!=":
            hit = not hit
        return int(hit == negate)

    def regex_test(self, left: _Word, right: _Word) -> int | None:
        """``[[ LEFT =~ RIGHT ]]`` (``kvconfig.load.shell.regex``): its status, and
        ``BASH_REMATCH`` set; None, and ``BASH_REMATCH`` unknown, when only known at run
        time."""
        subject, what = self.expand_string(left)
        pieces: list[tuple[str, bool]] = []
        for part in right.parts:
            value = part.text if part.kind == "lit" else self.part_value(part, tilde=False)[0]
            if value is None:
                break
            pieces.append((value, part.quoted))
        else:
            decided = None if subject is None else regex_match(subject, pieces)
            if decided is not None and not self.state.nocase:
                self.state.arrays["BASH_REMATCH"] = decided[1]
                self.state.vars["BASH_REMATCH"] = decided[1][0] if decided[1] else ""
                return decided[0]
        self.state.arrays["BASH_REMATCH"] = [None]
        self.assign("BASH_REMATCH", None, "BASH_REMATCH")
        self.last_unknown = what if subject is None else f"the match of {right.raw()}"
        return None

    def program_of(self, word: _Word) -> tuple[str, str] | None:
        """(the program, "" or the unquoted run-time part a blank in which would split the
        word) a command word only known at run time runs when it names one program all
        the same: ``$NAME`` where NAME names one (``_State.programs``), or a word whose
        known text ends with ``/NAME`` (``"$ROOT/bin/vllm"``, the ``<run time>/bin/vllm``
        of an eval'd text): a path's last part."""
        parts = word.parts
        if len(parts) == 1 and parts[0].kind == "param":
            name = parts[0].text
            if self.state.vars.get(name, "") is not None or name not in self.state.programs:
                return None
            return self.state.programs[name], "" if parts[0].quoted else _source_form(parts[0])
        if len(parts) < 2 or parts[-1].kind != "lit" or any(p.kind == "cmd" for p in parts):
            return None
        tail = path_program(parts[-1].text)
        if tail is None or parts[-1].text.endswith("/"):
            return None
        loose = [p for p in parts[:-1] if p.kind != "lit" and not p.quoted]
        return tail, (_source_form(loose[0]) if loose else "")

    def compound_test(self, words: list[_Word]) -> int | None:
        """``[[ A && B || C ]]``: ``&&`` binds tighter than ``||`` (bash manual,
        "Conditional Constructs"); each part is a test of its own. A false part makes its
        ``&&`` group false and a true group makes the whole true, whatever the parts only
        known at run time; otherwise an unknown part leaves the status unknown."""
        groups: list[list[list[_Word]]] = [[[]]]
        for w in words:
            marker = w.parts[0].text if w.parts and w.parts[0].kind == "andor" else ""
            if marker == "&&":
                groups[-1].append([])
            elif marker == "||":
                groups.append([[]])
            else:
                groups[-1][-1].append(w)
        results = []
        for group in groups:
            terms = [self.one_test(term) for term in group]
            results.append(1 if 1 in terms else (None if None in terms else 0))
        if 0 in results:
            return 0
        return None if None in results else 1

    def one_test(self, words: list[_Word]) -> int | None:
        """One test between ``[[``, ``&&``, ``||`` and ``]]``: 0, 1, or None (run time;
        also a test bash would refuse)."""
        matched = self.pattern_test(words)
        if matched != "other":
            return matched if isinstance(matched, int) else None
        args: list[str] = []
        for w in words:
            fields, unknown = self.expand_one(w)
            if unknown:
                self.last_unknown = unknown[0]
                return None
            args.extend(fields)
        status = _test(args, self.dialect, True)
        if status is None:
            self.last_unknown = "a file or an option test"
        return status if status in (0, 1) else None
