"""The builtins that change the shell's scope: ``export``/``readonly``/``declare``/
``typeset``/``local``, array assignment, function calls (with their ``local`` frames),
``eval``, and what makes every variable unknown (``eval`` of an unknown text, a sourced
file); plus the environment a program started now gets.
"""

from __future__ import annotations

import re

from kvconfig.errors import ScriptJumps as _Jump
from kvconfig.errors import ScriptStops as _Stop
from kvconfig.load.shell import parser as p
from kvconfig.load.shell.control import _Control
from kvconfig.load.shell.fields import split_value
from kvconfig.load.shell.state import MAX_EVAL_DEPTH
from kvconfig.load.shell.words import _Word


class _Scope(_Control):
    def assign_array(self, name: str, elements: list[_Word], append: bool) -> None:
        values: list[str | None] = []
        for w in elements:
            fields, unknown = self.expand_word(w)
            values.extend([None] if unknown else fields)
        old = self.state.arrays.get(name, []) if append else []
        self.state.arrays[name] = [*old, *values]
        self.state.vars[name] = self.state.arrays[name][0] if self.state.arrays[name] else ""

    def read_array(
        self, args: list[str], local: dict[str, str | None], here: tuple[str | None, str]
    ) -> int | str | None:
        """bash's ``read -r -a NAME <<< WORD``: the first line of the here-string split
        into the array's elements as words are split (``IFS`` as the command sees it: a
        prefix ``IFS=,`` counts), other names ignored (bash builtins/read.def).
        "other" for any other ``read``; None when the line is only known at run time."""
        raw, name, k = False, "", 0
        while k < len(args) and args[k].startswith("-") and args[k] != "-":
            option, k = args[k], k + 1
            if option == "--":
                break
            for n, letter in enumerate(option[1:], start=1):
                if letter == "r":
                    raw = True
                elif letter == "a":
                    name = option[n + 1 :]
                    if not name and k < len(args):
                        name, k = args[k], k + 1
                    break
                else:
                    return "other"  # -d, -n, -t, -u ... read otherwise
        if self.dialect != "bash" or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            return "other"
        text, what = here
        ifs = local["IFS"] if "IFS" in local else self.ifs()
        line = None if text is None else text.split("\n", 1)[0]
        if line is None or ifs is None or (not raw and "\\" in line):
            self.state.arrays[name] = [None]
            self.assign(name, None, what or f"read -a {name}")
            return None
        values: list[str | None] = list(split_value(line, ifs))
        self.state.arrays[name] = values
        self.state.vars[name] = values[0] if values else ""
        return 0

    def exported_env(self) -> dict[str, str | None]:
        """The environment a program started now gets (None: only known at run time)."""
        st = self.state
        env = {k: st.vars.get(k) for k in st.exported if k in st.vars}
        env.update(dict.fromkeys(st.maybe_exported & set(st.vars)))
        return env

    def opaque(self, what: str) -> int | None:
        """Something that may change any variable: everything not yet known stays unknown."""
        self.blind.append(what)
        for name in list(self.state.vars):
            if name not in self.state.readonly:
                self.assign(name, None, what)
        self.unknown_rest = True
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
                    )
                    if not eq:
                        self.state.vars.pop(name, None)
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

    def stop(self) -> int:
        raise _Stop

    def call(self, name: str, args: list[str], local: dict[str, str | None]) -> int | None:
        if self.depth >= MAX_EVAL_DEPTH:
            return self.opaque(f"the function {name}")
        saved_args = self.state.args
        zero = saved_args[0] if saved_args else "sh"
        self.state.args = [zero, *args]
        self.local_frames.append({})
        self.depth += 1
        status: int | None
        try:
            status = self.run_node(self.state.functions[name])
        except _Jump as jump:
            if jump.kind != "return":
                raise
            status = None
        finally:
            self.depth -= 1
            frame = self.local_frames.pop()
            for var, (was_set, old, exported) in frame.items():
                if was_set:
                    self.state.vars[var] = old
                else:
                    self.state.vars.pop(var, None)
                if exported:
                    self.state.exported.add(var)
            self.state.args = saved_args
        return status

    def nested(self, text: str, line: int | None) -> int | None:
        if self.depth >= MAX_EVAL_DEPTH:
            return self.opaque("eval")
        outer = self.line0
        self.line0 = line
        self.depth += 1
        try:
            return self.run_node(p.parse(self.lexer(text)))
        finally:
            self.depth -= 1
            self.line0 = outer
