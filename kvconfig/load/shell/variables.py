"""The base of the evaluator: its starting state, the variables as the shell looks them up
(positional and special parameters, arrays, ``IFS``), assignment (``readonly`` included)
and the variables of arithmetic. The expansions, control flow and builtins build on it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from kvconfig.errors import InputError
from kvconfig.errors import ScriptStops as _Stop
from kvconfig.load.shell import nodes as N
from kvconfig.load.shell.arith import arith
from kvconfig.load.shell.jumps import Frame
from kvconfig.load.shell.lexer import _Lexer
from kvconfig.load.shell.parser import parse_text
from kvconfig.load.shell.state import MAX_TEMPLATE, MAX_TEXTS, Command, _State, path_program
from kvconfig.load.shell.words import HOLE, _Word, hole, hole_what

_DEFAULT_IFS = " \t\n"

_BASH_SETS = frozenset(
    {"BASH_VERSION", "BASH_VERSINFO", "BASHPID", "RANDOM", "SRANDOM", "SECONDS", "PPID", "UID"}
    | {"EUID", "HOSTNAME", "HOSTTYPE", "OSTYPE", "MACHTYPE", "EPOCHSECONDS", "EPOCHREALTIME"}
)
"""Variables bash itself sets (bash's manual, "Bash Variables"): the bash that runs the
script, its process and machine, only known at run time until the script assigns them."""


_LOOKUP = re.compile(r"\$\(\s*command -v ([A-Za-z0-9_.+-]+)\s*(?:\|\|\s*true\s*)?\)")
"""``$(command -v NAME)`` (``|| true`` kept empty on failure): the path of NAME, or nothing."""


class _Variables:
    def __init__(  # noqa: PLR0917 (the script's starting state)
        self,
        env: Mapping[str, str | None],
        args: Sequence[str] | None,
        unknown_rest: bool,
        source: str,
        line0: int | None,
        key: str,
        dialect: str,
    ) -> None:
        self.state = _State(dict(env), set(env), None if args is None else list(args))
        for name, value in env.items():
            if value is None:
                self.state.why[name] = "$" + name
            elif HOLE.search(value):  # known text around run-time parts: a template
                self.state.vars[name] = None
                self.state.why[name] = "$" + name
                self.state.templates[name] = (value,)
        # Every new shell sets IFS to space, tab, newline, whatever its environment says:
        # bash's initialize_shell_variables ("Don't allow IFS to be imported from the
        # environment", variables.c), dash's INIT block (setvareq(defifsvar), var.c).
        self.state.vars["IFS"] = _DEFAULT_IFS
        self.state.why.pop("IFS", None)
        # and $PWD to the folder it starts in (kvconfig.load.shell.dirs): the caller's
        self.state.vars["PWD"] = None
        self.state.why["PWD"] = "$PWD (the folder the script is started from)"
        if dialect == "bash" and env.get("OLDPWD") is not None:
            self.state.vars["OLDPWD"] = None  # bash keeps it only when it names a folder
        self.unknown_rest = unknown_rest
        self.may_set: list[re.Pattern[str]] = []
        """Names a sourced environment script may have set (``env_scripts``): unknown."""
        self.source = source
        self.line0 = line0
        self.key = key
        self.dialect = dialect
        self.commands: list[Command] = []
        self.substituted_runs: set[tuple[int, tuple[str, ...]]] = set()
        self.blind: list[str] = []
        self.unparsed: list[InputError] = []
        self.steps = 0
        self.choices = 0
        self.depth = 0
        self.last_unknown = ""
        # per local: (was set, its value, exported, its array or None) before the function
        self.frames: list[Frame] = []  # functions, loops, subshells (shell.jumps)
        self.calling: list[str] = []
        """The functions being run now, outermost first (a call again on run-time input is
        not followed: ``kvconfig.load.shell.effects``)."""
        self.local_frames: list[
            dict[str, tuple[bool, str | None, bool, list[str | None] | None]]
        ] = []
        # NAME=(...) words after a declaration builtin, for it to assign (bash)
        self.declared_arrays: dict[str, tuple[list[_Word], bool]] = {}

    # ----- errors and lines -----------------------------------------------------------
    def at(self, line: int) -> int | None:
        return None if self.line0 is None else self.line0 + line - 1

    def lexer(self, text: str) -> _Lexer:
        return _Lexer(text, self.source, self.line0, self.key, self.dialect)

    def parsed(self, text: str) -> N.Sequence:
        """``text``'s commands, as this shell reads them here (``parser.parse_text``)."""
        return parse_text(text, self.source, self.line0, self.key, self.dialect)

    # ----- variables --------------------------------------------------------------------
    def lookup(self, name: str) -> tuple[bool, str | None]:
        """(is set, value); a set variable with value None holds an unknown value."""
        st = self.state
        if name in st.vars and name not in st.arrays:  # the common case first
            return True, st.vars[name]
        if name.isdigit():
            if st.args is None:
                return True, None
            n = int(name)
            if n < len(st.args) and hole_what(st.args[n]) is not None:
                return True, None  # a function's argument only known at run time
            return (n < len(st.args), st.args[n] if n < len(st.args) else "")
        if name == "#":
            return True, None if st.args is None else str(max(len(st.args) - 1, 0))
        if name in ("@", "*"):
            if st.args is None or any(hole_what(a) is not None for a in st.args[1:]):
                return True, None
            return bool(st.args[1:]), self.ifs_join(st.args[1:])
        if name == "?":
            return True, None if st.status is None else str(st.status)
        if name in "$!-":
            return True, None
        if name in st.arrays:
            values = st.arrays[name]
            return (bool(values), values[0] if values else "")
        if name in st.vars:
            return True, st.vars[name]
        if self.unknown_rest or (name in _BASH_SETS and self.dialect == "bash"):
            return True, None
        if any(sets.fullmatch(name) for sets in self.may_set):
            return True, None
        return False, ""

    def ifs(self) -> str:
        value = self.state.vars.get("IFS")
        if value is not None and "IFS" not in self.state.arrays:
            return value
        is_set, value = self.lookup("IFS")
        if not is_set:
            return _DEFAULT_IFS
        return value if value is not None else _DEFAULT_IFS

    def ifs_join(self, values: Sequence[str]) -> str:
        known, value = self.lookup("IFS")
        sep = " " if not known else (value or "")[:1]
        return sep.join(values)

    def assign(self, name: str, value: str | None, why: str = "") -> None:
        st = self.state
        if name in st.readonly:
            if self.dialect == "sh":
                raise _Stop  # dash: assigning a readonly variable stops the script
            st.status = 1
            return
        if name in st.arrays:
            st.arrays[name][0:1] = [value]
        st.vars[name] = value
        st.programs.pop(name, None)
        st.templates.pop(name, None)
        if value is None:
            st.why[name] = why or ("$" + name)
            m = _LOOKUP.fullmatch(why)
            if m:  # command -v prints the path of the program it finds (or nothing)
                st.programs[name] = m.group(1)
                st.templates[name] = (hole(st.why[name]) + "/" + m.group(1),)
        else:
            st.why.pop(name, None)

    def unknown_why(self, name: str) -> str:
        if name.isdigit() and self.state.args and int(name) < len(self.state.args):
            return hole_what(self.state.args[int(name)]) or "$" + name
        return self.state.why.get(name, "$" + name)

    def arith_var(self, name: str) -> int | None:
        _is_set, value = self.lookup(name)
        if value is None:
            return None
        if not value.strip():
            return 0
        try:
            return arith(value, self.arith_var, depth=1)
        except ValueError:
            return None

    def template_of(self, name: str) -> tuple[str, ...]:
        """The texts of a variable as ``eval`` reads it: its value, or its known text with
        the run-time parts marked (a whole run-time value is one mark; unset: nothing)."""
        is_set, value = self.lookup(name)
        if value is not None or not is_set:
            return (value or "",)
        return self.state.templates.get(name) or (hole(self.unknown_why(name)),)

    def keep_template(self, name: str, texts: tuple[str, ...]) -> None:
        """Keep the known text of a run-time value, when some of it is known."""
        texts = tuple(dict.fromkeys(texts))
        small = len(texts) <= MAX_TEXTS and sum(len(t) for t in texts) <= MAX_TEMPLATE
        if small and all(HOLE.sub("", t).strip() for t in texts):
            self.state.templates[name] = texts
            tails = {path_program(t) for t in texts}  # "$ROOT/bin/vllm" names vllm
            if len(tails) == 1 and (tail := tails.pop()) is not None:
                self.state.programs[name] = tail
