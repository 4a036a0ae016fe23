"""Simple commands: leading assignments, then the command's words expanded and dispatched
to a builtin (``:``, ``test``, ``set``, ``shift``, ``exit``, ``break``, ``eval``,
``source``, ``read`` ...), a function, a nested ``sh -c`` (run by a new ``_Shell``) or a
program, recorded as a ``Command`` once its wrappers are removed. ``_Shell`` is the whole
evaluator.
"""

from __future__ import annotations

import os
import re

from kvconfig.errors import ScriptJumps as _Jump
from kvconfig.errors import ScriptStops as _Stop
from kvconfig.load.shell import nodes as N
from kvconfig.load.shell.children import _Children
from kvconfig.load.shell.conditions import _test
from kvconfig.load.shell.getopts import getopts
from kvconfig.load.shell.remote import remote_of
from kvconfig.load.shell.scope import DECLARE
from kvconfig.load.shell.state import Command
from kvconfig.load.shell.words import (
    HOLE,
    _Word,
    assignment,
    element_assignment,
    hole,
    hole_names,
    holes_named,
    one_field,
)
from kvconfig.load.shell.wrappers import (
    SHELLS,
    file_of,
    script_of,
    unwrap,
)

_ATTACHED = re.compile(r"--[A-Za-z][A-Za-z0-9-]*=")


class _Shell(_Children):
    # ----- simple commands -------------------------------------------------------------
    loose = False
    """A run-time word of the command being run may be several fields (or none)."""
    here_input: tuple[str | None, str] | None = None
    """The input of the ``read`` being run, a here-string (``<<< WORD``) or here-document:
    (its text or None when only known at run time, what was unknown)."""
    own_input = False
    """The command being run has its own input (``<FILE``, ``<<<``, ``<<``)."""

    def simple(self, node: N.Simple, background: bool = False) -> int | None:
        words, here = node.plain, node.here
        line = self.at(node.line)
        if node.opaque:
            self.last_unknown = node.opaque if isinstance(node.opaque, str) else "a [[ ]] test"
            return None
        if self.printed is not None and self.printing_python(node):
            return 0  # python3 - <<'PY' in a function read for $(f ARGS): what it prints
        if words and words[0].parts and words[0].parts[0].kind == "arithcmd":
            return self.arith_command(words[0].parts[0].text)  # bash's (( expression ))
        if node.andor:  # [[ A && B ]]
            return self.compound_test(words[1:-1])
        if self.dialect == "bash" and words and words[0].raw() == "[[":
            matched = self.pattern_test(words[1:-1])
            if matched != "other":
                return matched if isinstance(matched, int) else None
        assigns: list[tuple[str, str | None, str, bool, _Word]] = []
        rest = list(words)
        subst = False
        split: list[str] = []
        while rest:
            word0 = rest[0]
            found = assignment(word0)
            if found is None:
                element = element_assignment(word0) if self.dialect == "bash" else None
                if element and element[0]:
                    self.assign_element(*element)  # NAME[SUB]=value
                    rest.pop(0)
                    continue
                break
            rest.pop(0)
            name, append, value_word = found
            if len(word0.parts) > 1 and word0.parts[1].kind == "array":
                self.assign_array(name, word0.parts[1].words, append)
                continue
            subst = subst or any(part.kind == "cmd" for part in word0.parts)
            if any(part.kind == "hole" and not part.quoted for part in word0.parts):
                split.append(name)  # eval "X=$RUN_TIME cmd": a blank in it ends X='s word
            value, what = self.expand_string(value_word)
            assigns.append((name, value, what, append, value_word))
        expanded: list[str] = []
        unknown_at: list[tuple[int, str]] = []
        # bash expands no braces between [[ and ]] (the bash manual, Conditional Constructs)
        expand = self.expand_one if rest and rest[0].raw() == "[[" else self.expand_word
        self.loose = False  # a run-time word may be any number of fields
        self.also_set, self.field_texts = [], {}
        declares = bool(rest) and rest[0].raw() in DECLARE
        kept: list[tuple[str, tuple[str, ...]]] = []
        self.declared_arrays = {}
        for w in rest:
            if declares and w is not rest[0] and (found := assignment(w)):
                fields, unknown = self.declared(w, found[0], found[2], kept)
            else:
                self.holes_ok = True
                try:
                    fields, unknown = expand(w)
                finally:
                    self.holes_ok = False
                for k, text in enumerate(fields):  # "$1" holding known text around holes
                    if "\ue000" in text and not HOLE.fullmatch(text):
                        self.field_texts[len(expanded) + k] = text
                fields = self.holes_apart(fields, len(expanded), unknown_at)
                if unknown and len(fields) == 1:
                    fields, unknown = self.known_around(w, fields, unknown)
            for what in unknown:
                unknown_at.append((len(expanded), what))
            if unknown and len(fields) == 1:
                fields = self.run_time_field(w, fields[0], unknown[0], expanded, split)
            expanded.extend(fields)
            self.loose = self.loose or (bool(unknown) and not one_field(w))
        self.redirected(node.words, expanded if not unknown_at else None, here)
        if not rest:
            for name, given, what, append, value_word in assigns:
                value = given
                if append and given is not None:
                    _is_set, old = self.lookup(name)
                    value = None if old is None else (old or "") + given
                texts = ("",) if value is not None else self.expand_template(value_word)
                before = self.template_of(name) if append else ("",)
                self.assign(name, value, what)
                if value is None:
                    self.keep_template(name, tuple(a + b for a in before for b in texts))
            return self.subst_status if subst else 0  # $? of the last $(...)
        if not expanded:
            return 0
        program = self.program_of(rest[0])
        if program and [i for i, _ in unknown_at].count(0) == 1:
            expanded[0] = program[0]  # "$VLLM_BIN": a run-time path that names vllm
            unknown_at = [(i, what) for i, what in unknown_at if i != 0]
            split += [program[1]] if program[1] else []
        if any(i == 0 for i, _ in unknown_at):
            self.last_unknown = unknown_at[0][1]
            self.blind.append(f"the command {words[0].raw()!r} ({self.last_unknown})")
            return None
        if expanded[0] == "eval" and unknown_at and not assigns:
            return self.eval_parts(rest[1:], unknown_at[0][1], line)
        local: dict[str, str | None] = {}
        for name, value, _what, _append, _word in assigns:
            local[name] = value
        self.here_input = self.here_text(here[-1], expanded[0]) if here else None
        self.own_input = bool(here) or any(w.stdin for w in node.words)
        when = self.state.when
        if split:
            self.state.when = (*when, f"the run-time value of {split[0]} holding no blank "
                               "(the shell would split it there)")  # fmt: skip
        try:
            status = self.command(
                expanded, unknown_at, local, line, background or self.backgrounded > 0
            )
            for name, texts in kept:  # local CMD="vllm serve $RUN_TIME": as an assignment
                if self.lookup(name)[1] is None:
                    self.keep_template(name, texts)
            return status
        finally:
            self.here_input = None
            if split:
                self.state.when = when

    @staticmethod
    def holes_apart(fields: list[str], at: int, unknown_at: list[tuple[int, str]]) -> list[str]:
        """Fields of a command's word that hold holes (``"$@"`` given an argument only
        known at run time): each is only known at run time, written as that argument was,
        at its own place among the command's words (``at``: where the word's first is)."""
        if not any("\ue000" in text for text in fields):  # no hole (HOLE's first mark)
            return fields
        out = []
        for k, text in enumerate(fields):
            written, first = holes_named(text)
            if first is not None:
                unknown_at.append((at + k, first))
            out.append(written)
        return out

    def known_around(
        self, word: _Word, fields: list[str], unknown: list[str]
    ) -> tuple[list[str], list[str]]:
        """A one-field word whose run-time parts sit in known text a variable holds
        (``"$KV"``, ``KV="{\"port\": $PORT}"`` with ``$PORT`` unknown): the field as that
        text, each run-time part written as what it names (as if the script wrote the text
        in place), and those parts as what is unknown in it."""
        if not one_field(word):
            return fields, unknown
        texts = self.expand_template(word)
        if len(texts) != 1 or not HOLE.sub("", texts[0]).strip():
            return fields, unknown
        names = hole_names(texts[0])
        if not names:
            return fields, unknown
        return [holes_named(texts[0])[0]], names

    def command(
        self,
        words: list[str],
        unknown_at: list[tuple[int, str]],
        local: dict[str, str | None],
        line: int | None,
        background: bool,
    ) -> int | None:
        """Run one expanded command: a builtin, a function, a nested shell or a program."""
        head = words[0]
        known = not unknown_at
        defer, self.deferring = self.deferring, False  # only this command's own cd

        def shift_unknown(n: int) -> list[tuple[int, str]]:
            return [(i - n, w) for i, w in unknown_at if i >= n]

        if head in (":", "true"):
            return 0
        if head == "false":
            return 1
        if head in ("[", "test", "[["):
            if head == "[[" and self.dialect != "bash":
                return 127
            if not known:
                self.last_unknown = unknown_at[0][1]
                return None
            args = words[1:]
            if head == "[":
                if not args or args[-1] != "]":
                    return 2
                args = args[:-1]
            if head == "[[":
                args = args[:-1]
            result = _test(args, self.dialect, head == "[[")
            if result is None:
                self.last_unknown = "a file or an option test"
            return result
        if head == "shopt" and "nocasematch" in words:
            self.state.nocase = True  # set or unset: from here [[ == ]] is left undecided
        if head in ("echo", "printf") and not (head == "printf" and words[1:2] == ["-v"]):
            self.echo(words, known)
            return 0
        if head == "printf" and self.printf_to(words, known, line):
            return 0
        if head in ("export", "readonly", "declare", "typeset", "local"):
            if head in ("declare", "typeset") and self.dialect != "bash":
                return 127
            return self.declare(head, words[1:], unknown_at)
        if head == "unset":
            for name in words[1:]:
                if name.startswith("-"):
                    continue
                if name in self.state.readonly:
                    return 1
                self.unset(name)
            return 0
        if head in ("set", "shift"):
            return self.positional(words, known, line)
        if head in ("exit", "return"):
            if head == "return" and (self.local_frames or self.sourcing):
                word = words[1] if len(words) > 1 and known else None
                gives = self.state.status if len(words) == 1 else None
                if word is not None and re.fullmatch(r"[0-9]+", word):
                    gives = int(word) & 255  # return N: N modulo 256 (bash, dash)
                raise _Jump("return", 1, gives)
            raise _Stop
        if head in ("break", "continue"):
            try:
                count = int(words[1]) if len(words) > 1 else 1
            except ValueError:
                count = 1
            raise _Jump(head, count)
        if head == "eval":
            if not known:
                self.last_unknown = unknown_at[0][1]
                self.state.args = self.state.args
                return self.opaque(f"eval of {unknown_at[0][1]}")
            return self.nested(" ".join(words[1:]), line)
        if head in (".", "source"):
            if head == "source" and self.dialect != "bash":
                return 127
            return self.source_file(head, words, known)
        if head == "read" and known and self.here_input is not None:
            status = self.read_input(words[1:], local, self.here_input)
            if status != "other":
                return status if isinstance(status, int) else None
        elif head == "read" and self.state.input is not None and not self.own_input:
            if not known:  # which names it sets is only known at run time
                self.state.input = (None, f"the input read {unknown_at[0][1]} takes")
            else:
                status = self.read_input(words[1:], local, self.state.input, fed=True)
                if status != "other":
                    return status if isinstance(status, int) else None
        if head == "getopts" and known and len(words) >= 3:
            status = getopts(self, words[1], words[2], words[3:] if len(words) > 3 else None)
            if status != "other":
                return status if isinstance(status, int) else None
        if head in ("read", "getopts", "mapfile", "readarray") or (
            head == "printf" and words[1:2] == ["-v"]
        ):
            for name in words[1:]:
                if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                    self.assign(name, None, f"{head} on line {line}")
            return None
        if head == "cd":
            self.deferring = defer
            try:
                return self.change_dir(words[1:], known)
            finally:
                self.deferring = False
        if head == "pwd":
            return 0
        if head in ("pushd", "popd"):
            self.lost_dir(f"{head} on line {line}")
            return None
        if head == "trap":
            return self.trap(words[1:] if known else None)
        if head == "wait" and not background:
            self.waits()
        if head in ("wait", "umask", "ulimit", "alias", "hash"):
            return None
        if head == "let":
            return self.opaque("let") if self.dialect == "bash" else 127
        if head in self.state.functions and (known or (not self.loose and unknown_at[0][0])):
            args = list(words[1:])
            for i, what in unknown_at:  # "$X" only known at run time: one argument
                args[i - 1] = self.field_texts.get(i) or hole(what)
            return self.call(head, args, local)
        if head in self.state.functions:
            self.blind.append(f"the function {head} called with {unknown_at[0][1]}")
            return None
        inner, extra, replaces, unknown_shift = unwrap(words)
        if inner is None:
            self.last_unknown = "the command"
            if os.path.basename(words[0]) == "srun":  # a copy per task, the count not said
                self.blind.append("an srun step, one copy of its program per task")
            return None
        if not inner:  # exec with redirections only: the shell goes on
            return 0
        inner_unknown = shift_unknown(unknown_shift)
        for name, value in extra.items():  # env NAME=$RUN_TIME: a setting only known there
            if value is not None and HOLE.search(value):
                extra[name] = None
        extra |= dict.fromkeys(self.also_set)
        settings = {i for i, w in enumerate(words[:unknown_shift]) if HOLE.search(w)}
        if not self.loose:  # a wrapper's option with its value attached (--nodelist="$N")
            settings |= {i for i, w in enumerate(words[:unknown_shift]) if _ATTACHED.match(w)}
        if any(i < unknown_shift and i not in settings for i, _ in unknown_at) or (
            inner_unknown and inner_unknown[0][0] == 0
        ):
            self.blind.append(f"the command {' '.join(words[:2])!r}")
            return None
        local = {**local, **extra}
        self.input_read(inner, background or self.backgrounded > 0, self.own_input)
        self.changed(inner, {i for i, _ in inner_unknown})
        if (where := remote_of(inner)) is not None:  # docker exec, ssh: run elsewhere
            shift = unknown_shift
            return self.run_remote(inner, inner_unknown, where, background, shift, line=line)
        if inner and inner[0] != words[0] and inner[0] in self.state.functions and known:
            return self.call(inner[0], inner[1:], local)
        script_at = script_of(inner)
        if script_at is not None and os.path.basename(inner[0]) in SHELLS:
            script: str | None = inner[script_at]  # its known text around run-time parts
            if any(i == script_at for i, _ in inner_unknown):
                script = self.field_texts.get(script_at + unknown_shift)
            if any(i < script_at for i, _ in inner_unknown):
                script = None
            given = inner[script_at + 1 :] if not inner_unknown else None
            sub = self.run_script(inner[: script_at + 1], script, given, local, line)
            self.adopt(sub, background, replaces)
            return None
        file_at = file_of(inner)
        if file_at is not None and self.run_file(inner, file_at, inner_unknown, local, line):
            self.adopt(self.last_child, background, replaces, line)
            return None
        if "/" in inner[0] and self.run_held(inner, inner_unknown, local, line):
            self.adopt(self.last_child, background, replaces, line)
            return None
        env = self.exported_env()
        env.update(local)
        self.commands.append(
            Command(
                tuple(inner),
                env,
                tuple(inner_unknown),
                line,
                background,
                self.state.when,
                self.state.branch,
                replaces,
                self.rounds,
            )
        )
        if replaces and not background:
            raise _Stop
        return None
