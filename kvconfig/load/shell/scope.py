"""The builtins that change the shell's scope: ``export``/``readonly``/``declare``/
``typeset``/``local``, array assignment, function calls (with their ``local`` frames),
``eval``, and what makes every variable unknown (``eval`` of an unknown text, a sourced
file); plus the environment a program started now gets.
"""

from __future__ import annotations

import re

from kvconfig.errors import InputError
from kvconfig.errors import ScriptStops as _Stop
from kvconfig.load.shell.effects import assigned
from kvconfig.load.shell.fields import split_value
from kvconfig.load.shell.loops import _Loops
from kvconfig.load.shell.read_input import _fields, _read_options, _take
from kvconfig.load.shell.state import MAX_EVAL_DEPTH, MAX_TEXTS
from kvconfig.load.shell.words import HOLE, _Word
from kvconfig.load.shell.wrappers import after_options, option_after, unknown_to_dash

_BUILTINS = frozenset(
    {":", "true", "false", "echo", "printf", "read", "mapfile", "readarray", "cd", "pwd"}
    | {"eval", ".", "source", "export", "readonly", "declare", "local", "typeset", "set"}
    | {"shift", "test", "[", "exit", "return", "let", "unset", "wait", "trap", "exec"}
)
"""bash builtins a here-document may feed (bash's manual, "Shell Builtin Commands")."""


DECLARE = frozenset({"export", "readonly", "local", "declare", "typeset"})
"""Declaration builtins: a ``NAME=value`` word after one is expanded as an assignment,
without field splitting or pathname expansion (bash's manual, "Bourne Shell Builtins";
dash from 0.5.11; POSIX 2024's declaration utilities)."""


class _Scope(_Loops):
    def read_input(
        self,
        args: list[str],
        local: dict[str, str | None],
        here: tuple[str | None, str],
        fed: bool = False,
    ) -> int | str | None:
        """``read`` from a here-string or here-document (bash ``builtins/read.def``, dash
        ``readcmd`` in ``src/miscbltin.c``, POSIX ``read``): the input up to the delimiter
        (a newline; bash's ``-d C``: C, ``-d ''`` a NUL byte), without ``-r`` a backslash
        and newline removed and a backslash making the next character ordinary; split as
        words are split (``IFS`` as the command sees it: a prefix ``IFS=,`` counts), the
        last name taking the rest of the line (its IFS white space trimmed, and a last
        delimiter when one field is left), bash's ``-a NAME`` taking every field; no
        input left: status 1, the names empty. "other" for options kvconfig does not
        read; None when the input is only known at run time. ``fed``: the input is the
        one a compound command is fed, and what ``read`` takes is gone from it."""
        opts = _read_options(args, self.dialect)
        if opts is None:
            if fed:
                self.state.input = (None, f"the input read {' '.join(args)} takes")
            return "other"
        raw, delim, array, names = opts
        text, what = here
        ifs = local["IFS"] if "IFS" in local else self.ifs()
        taken = None if text is None or ifs is None else _take(text, delim, raw, ifs)
        targets = [array] if array else names or ["REPLY"]
        if taken is None or ifs is None:
            if array:
                self.state.arrays[array] = [None]
            for name in targets:
                self.assign(name, None, what or f"read {name}")
            if fed:
                self.state.input = (None, what or "the input")
            return None
        line, status, end = taken
        if fed:
            self.state.input = (text[end:] if text is not None else None, what)
        if array:
            values: list[str | None] = list(split_value(line, ifs))
            self.state.arrays[array] = values
            self.state.vars[array] = values[0] if values else ""
            return status
        fields = [line] if not names else _fields(line, ifs, len(names))
        for name, value in zip(targets, fields, strict=True):
            self.assign(name, value)
        return status

    def here_text(self, word: _Word, head: str | None) -> tuple[str | None, str]:
        """The input a here-string (a newline added) or here-document gives the command
        ``head`` (None: a compound command): (its text, None when only known at run
        time; what was unknown). Its expansions' effects (``${X:=v}``) stay in the script
        where the shell expands it in itself: dash always, bash for a compound command, a
        builtin or a function (a program's is expanded in the process bash starts for it)."""
        inside = head is None or head in _BUILTINS or head in self.state.functions
        inside = inside or self.dialect != "bash"
        saved = self.state
        if not inside:
            self.state = saved.copy()
        try:
            text, what = self.expand_string(word)
        except _Stop:
            if inside:
                raise
            text, what = None, "the here-document"
        finally:
            self.state = saved
        end = "" if word.doc or text is None else "\n"
        return (None if text is None else text + end), what

    def exported_env(self) -> dict[str, str | None]:
        """The environment a program started now gets (None: only known at run time), in
        the order the variables were set, whatever the hash seed."""
        st, maybe = self.state, self.state.maybe_exported
        known = st.exported | maybe
        return {k: None if k in maybe else v for k, v in st.vars.items() if k in known}

    def opaque(self, what: str, names: frozenset[str] | None = None) -> int | None:
        """Something that may change any variable (or ``names``): everything not yet known
        stays unknown."""
        self.blind.append(what)
        for name in list(self.state.vars) if names is None else sorted(names):
            if self.is_map(name):
                self.forget_map(name)
            elif name not in self.state.readonly:
                self.assign(name, None, what)
        self.unknown_rest = self.unknown_rest or names is None
        return None

    def declare(self, head: str, args: list[str], unknown_at: list[tuple[int, str]]) -> int | None:
        flags = ""
        status: int | None = 0
        if head == "local" and not self.local_frames:
            return 1 if self.dialect == "bash" else self.stop()
        for k, item in enumerate(args, start=1):
            if item.startswith(("-", "+")) and not flags.endswith("--"):
                flags += item
                continue
            name, eq, value = item.partition("=")
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                status = 1 if self.dialect == "bash" else self.stop()
                continue
            if head == "local" or (head in ("declare", "typeset") and self.local_frames):
                frame = self.local_frames[-1] if self.local_frames else None
                if frame is not None and name not in frame:
                    is_set, old = self.lookup(name)
                    frame[name] = (
                        is_set and name in self.state.vars,
                        old,
                        name in self.state.exported,
                        self.state.arrays.get(name),
                    )
                    if not eq:
                        self.state.vars.pop(name, None)
                        self.state.arrays.pop(name, None)
            elements = self.declared_arrays.pop(name, None) if eq else None
            if "A" in flags and head in ("declare", "typeset") and not self.local_frames:
                self.assign_map(name, bool(eq), elements)  # kvconfig.load.shell.maps
                continue
            if elements is not None and not ({"A", "i", "n"} & set(flags)):
                self.assign_array(name, *elements)
                continue
            if "a" in flags or "A" in flags or "i" in flags or "n" in flags:
                self.assign(name, None, f"{head} {flags}")
                continue
            if eq:
                if name in self.state.readonly:
                    if self.dialect == "sh":
                        raise _Stop
                    status = 1
                    continue
                known = not any(i == k for i, _ in unknown_at)
                self.assign(name, value if known else None, self.last_unknown)
            if head == "export" or "x" in flags:
                self.state.exported.add(name)
                self.state.maybe_exported.discard(name)
            if head == "readonly" or "r" in flags:
                self.state.readonly.add(name)
        return status

    def declared(
        self, word: _Word, name: str, value_word: _Word, kept: list[tuple[str, tuple[str, ...]]]
    ) -> tuple[list[str], list[str]]:
        """A ``NAME=value`` word after a declaration builtin (``local``, ``export`` ...),
        expanded as an assignment: one field (no splitting, no pathname expansion); a
        run-time value's known text goes to ``kept``."""
        if len(word.parts) > 1 and word.parts[1].kind == "array":
            # local A=(...) (bash): the builtin assigns the array, its words expanded as
            # NAME=(...)'s are
            self.declared_arrays[name] = (word.parts[1].words, word.parts[0].text.endswith("+="))
            return [word.raw()], []
        value, what = self.expand_string(word)
        if value is not None:
            return [value], []
        kept.append((name, self.expand_template(value_word)))
        return [word.raw()], [what]

    def take_options(self, options: list[str]) -> None:
        """The ``-e`` and ``-u`` (``-o errexit``, ``-o nounset``; ``+`` turns them off) of
        ``set OPTIONS``, of a shell's own options (``bash -e FILE``, ``sh -ec``) and of a
        launch script's ``#!`` line."""
        self.state.nounset = option_after(options, "u", "nounset", self.state.nounset)
        self.state.errexit = option_after(options, "e", "errexit", self.state.errexit)

    def positional(self, words: list[str], known: bool, line: int | None) -> int | None:
        """``set`` (its options; ``--`` or other words: new positional parameters) and
        ``shift``."""
        if words[0] == "set":
            if not known:
                self.state.args = None
                return 0
            k, _letters, _names = after_options(words, self.dialect)
            self.take_options(words[1:k])
            if self.dialect == "sh":
                self.state.when = (*self.state.when, *unknown_to_dash(words))
            if k < len(words) or "--" in words[1:k]:
                zero = self.state.args[0] if self.state.args else "sh"
                self.state.args = [zero, *words[k:]]
            return 0
        if self.state.args is None or not known:
            self.state.args = None
            if self.dialect == "sh":  # dash stops when there is too little to shift
                self.state.when = (
                    *self.state.when,
                    f"shift on line {line} succeeding (the arguments only known at run time)",
                )
            return None
        try:
            n = int(words[1]) if len(words) > 1 else 1
        except ValueError:
            return None
        if n > len(self.state.args) - 1:
            if self.dialect == "sh":
                raise _Stop
            return 1
        self.state.args = [self.state.args[0], *self.state.args[1 + n :]]
        return 0

    def stop(self) -> int:
        raise _Stop

    def call(self, name: str, args: list[str], local: dict[str, str | None]) -> int | None:
        again = name in self.calling and any(HOLE.search(a) for a in args)  # on run-time input
        if self.depth >= MAX_EVAL_DEPTH or again:  # only what its text may set is left unknown
            return self.opaque(f"the function {name}", assigned(name, self.state.functions))
        saved_args = self.state.args
        zero = saved_args[0] if saved_args else "sh"
        self.state.args = [zero, *args]
        self.local_frames.append({})
        self.depth += 1
        self.calling.append(name)
        body = self.state.functions[name]
        try:
            status = self.within("function", lambda: self.run_node(body))
        finally:
            self.depth -= 1
            self.calling.pop()
            frame = self.local_frames.pop()
            for var, (was_set, old, exported, array) in frame.items():
                self.state.templates.pop(var, None)
                if array is None:
                    self.state.arrays.pop(var, None)
                else:
                    self.state.arrays[var] = array
                if was_set:
                    self.state.vars[var] = old
                else:
                    self.state.vars.pop(var, None)
                if exported:
                    self.state.exported.add(var)
            self.state.args = saved_args
        return status

    def eval_parts(self, words: list[_Word], first: str, line: int | None) -> int | None:
        """``eval`` of a text partly only known at run time (``eval "$CMD &"``, ``$CMD``
        built from ``$(nvidia-smi ...)``): bash parses the text it is given, and so does
        kvconfig, each run-time part standing for text only known at run time inside the
        word where it stands (read as text: a run-time value holding ``;`` or quotes
        would be parsed further by bash). Nothing known besides: nothing to read."""
        texts: tuple[str, ...] = ("",)
        for k, word in enumerate(words):
            more = self.expand_template(word)
            if len(texts) * len(more) > MAX_TEXTS:
                texts = ()
                break
            texts = tuple(a + (" " if k else "") + b for a in texts for b in more)
        if not texts or self.ifs() != " \t\n" or not all(HOLE.sub("", t).strip() for t in texts):
            self.last_unknown = first
            return self.opaque(f"eval of {first}")
        # an empty run-time part may leave text the shell cannot parse (eval " &"): then
        # whether the commands run (and, in dash, whether the script goes on) is unknown
        fragile = f"the text eval runs ({first}) parsing whatever its run-time parts hold"
        if all(self.parses(HOLE.sub("", t)) for t in texts):
            fragile = ""
        else:
            self.state.when = (*self.state.when, fragile)
        try:
            if len(texts) == 1:
                return self.nested(texts[0], line)
            reason = self.reason(line or 0, f"the text eval runs ({first})")
            return self.fork([[t] for t in texts], reason, lambda t: self.nested(t, line))
        finally:
            if fragile and self.dialect == "bash":  # bash goes on after a syntax error
                self.state.when = tuple(w for w in self.state.when if w != fragile)

    def parses(self, text: str) -> bool:
        try:
            self.parsed(text)
        except InputError:
            return False
        return True

    def nested(self, text: str, line: int | None) -> int | None:
        if self.depth >= MAX_EVAL_DEPTH:
            return self.opaque("eval")
        outer = self.line0
        self.line0 = line
        self.depth += 1
        try:
            try:
                tree = self.parsed(text)
            except InputError as err:  # bash: eval fails with status 2; dash: the script ends
                self.unparsed.append(err)
                if self.dialect == "bash":
                    return 2
                raise _Stop from None
            return self.run_node(tree)
        finally:
            self.depth -= 1
            self.line0 = outer
