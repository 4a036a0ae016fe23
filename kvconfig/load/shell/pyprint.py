"""What a short Python program prints, read without running it.

Launch scripts build JSON options with Python so that no quoting can break them::

    KV=$(python3 - "$PORT" <<'PY'
    import json, sys
    print(json.dumps({"kv_connector": "LMCacheMPConnector", "kv_role": "kv_both",
                      "kv_connector_extra_config": {"lmcache.mp.port": int(sys.argv[1])}}))
    PY
    )

kvconfig never runs such a program. It parses it (``ast.parse``, which executes nothing)
and follows the few statements these programs are made of, in order: imports of the
standard library, ``def`` (a call of the function is a value only known at run time),
assignments (to a name, names, or an item of a dict or list the program built), ``if`` on
values it knows, and ``print`` at the top level. Values are
literals, names bound so, ``sys.argv[i]``, ``os.environ[...]``, ``os.environ.get`` and
``os.getenv`` (from the environment the shell gives the program), ``json.dumps``,
``int``/``float``/``str`` and arithmetic on numbers. A value only known at run time (an
argument or variable the shell does not know, a function's result) is a hole in the
printed text (``kvconfig.load.shell.words.hole``), named as the shell names it
(``$POD_IP``). Any other statement or expression (a loop, a ``try``, a call of anything
else, a module outside the standard library) makes the whole output only known at run time.
``print`` writes ``str`` of each argument, ``sep`` between them and ``end`` after (the
Python reference, built-in functions ``print``, ``str``; ``json.dumps`` as the ``json``
module writes it).
"""

from __future__ import annotations

import ast
import math
import sys
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kvconfig.errors import ProgramUnread as Unread
from kvconfig.load.shell.pyvalues import (
    MAX_TEXT,
    MAX_WORK,
    Hole,
    bounded,
    convert,
    dumps,
    number,
    plain,
    to_str,
)

MAX_PROGRAM = 64 * 1024
"""Longest program text kvconfig reads (these programs are a few dozen lines)."""

MAX_NUMBER = 10**30
"""Largest number arithmetic may give before kvconfig stops following it."""

_UNSAFE_IMPORTS = frozenset({"this", "antigravity", "__hello__", "__phello__"})
"""Standard modules whose import does something (prints, opens a browser)."""

Env = Callable[[str], tuple[bool, str | None]]
"""(set, value) of a variable of the program's environment; value None: only known at
run time."""


@dataclass(frozen=True)
class _Module:
    name: str


@dataclass(frozen=True)
class _Attr:
    """A module's attribute (``json.dumps``, ``os.environ``, ``sys.argv``)."""

    module: str
    name: str


@dataclass(frozen=True)
class _Function:
    """A function the program defines: a call is a value only known at run time."""

    name: str


def printed(program: str, argv: Sequence[str | None], env: Env, named: str) -> str | None:
    """What ``program`` prints to its output, run with ``argv`` (``sys.argv``; None: an
    argument only known at run time) in ``env``; a run-time part is a hole (``named``:
    how a part that is neither a variable nor an argument is named, the command). None
    when kvconfig does not follow the program."""
    if len(program) > MAX_PROGRAM:
        return None
    try:
        with warnings.catch_warnings():  # the program's own SyntaxWarnings are not ours
            warnings.simplefilter("ignore")
            tree = ast.parse(program)
        reader = _Reader(argv, env, named)
        reader.run(tree.body)
    except (Unread, SyntaxError, ValueError, TypeError, RecursionError, MemoryError):
        return None
    return "".join(reader.out)


class _Reader:
    def __init__(self, argv: Sequence[str | None], env: Env, named: str) -> None:
        self.argv: list[Any] = [
            a if a is not None else Hole(f"${{sys.argv[{k}]}}", True) for k, a in enumerate(argv)
        ]
        self.env = env
        self.named = f"$({named})"
        self.names: dict[str, Any] = {"__name__": "__main__"}
        self.out: list[str] = []
        self.work = [MAX_WORK]
        self.length = 0
        """How long the output is so far (at most ``MAX_TEXT``)."""

    def run(self, body: Sequence[ast.stmt]) -> None:
        for stmt in body:
            self.statement(stmt)

    def statement(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                top = alias.name.split(".")[0]
                self._importable(top)
                self.names[alias.asname or top] = _Module(alias.name if alias.asname else top)
        elif isinstance(stmt, ast.ImportFrom):
            if stmt.level or stmt.module is None:
                raise Unread
            self._importable(stmt.module.split(".")[0])
            for alias in stmt.names:
                if alias.name == "*":
                    raise Unread
                self.names[alias.asname or alias.name] = _Attr(stmt.module, alias.name)
        elif isinstance(stmt, ast.FunctionDef):
            calls = any(isinstance(n, ast.Call) for d in stmt.args.defaults for n in ast.walk(d))
            if stmt.decorator_list or calls or _prints(stmt):
                raise Unread
            self.names[stmt.name] = _Function(stmt.name)
        elif isinstance(stmt, ast.Assign):
            value = self.value(stmt.value)
            for target in stmt.targets:
                self.bind(target, value)
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            self.bind(stmt.target, self.value(stmt.value))
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            pass  # a docstring
        elif (
            isinstance(stmt, ast.Expr)
            and _called(stmt.value, "print")
            and "print" not in self.names
        ):
            self.print(stmt.value)  # type: ignore[arg-type]
        elif isinstance(stmt, ast.If):
            test = self.value(stmt.test)
            if isinstance(test, Hole) or not plain(test):
                raise Unread
            self.run(stmt.body if test else stmt.orelse)
        elif not isinstance(stmt, ast.Pass):
            raise Unread

    @staticmethod
    def _importable(top: str) -> None:
        if top not in sys.stdlib_module_names or top in _UNSAFE_IMPORTS:
            raise Unread  # another module's import may print, or not be there

    def bind(self, target: ast.expr, value: Any) -> None:
        if isinstance(target, ast.Name):
            self.names[target.id] = value
        elif isinstance(target, ast.Tuple | ast.List) and isinstance(value, list | tuple):
            if len(target.elts) != len(value):
                raise Unread  # the program fails: too many or too few values to unpack
            for t, v in zip(target.elts, value, strict=True):
                self.bind(t, v)
        elif isinstance(target, ast.Subscript) and not isinstance(target.slice, ast.Slice):
            self.store(self.value(target.value), self.value(target.slice), value)
        else:
            raise Unread

    def store(self, base: Any, key: Any, value: Any) -> None:
        """``base[key] = value`` for a dict or list the program built: changed in place,
        as Python does, so every name bound to it sees the change (a cycle it makes, or
        an index out of range, ends the reading)."""
        if isinstance(key, Hole) or not plain(key):
            raise Unread
        if isinstance(base, dict):
            base[key] = value
        elif isinstance(base, list) and isinstance(key, int) and not isinstance(key, bool):
            if not -len(base) <= key < len(base):
                raise Unread  # IndexError: the program fails
            base[key] = value
        else:
            raise Unread  # a tuple, a string, sys.argv or os.environ: not followed
        bounded(base, self.work)

    def print(self, call: ast.Call) -> None:
        sep, end = " ", "\n"
        for kw in call.keywords:
            given = self.value(kw.value) if kw.arg in ("sep", "end") else None
            if kw.arg == "sep" and (given is None or isinstance(given, str)):
                sep = " " if given is None else given
            elif kw.arg == "end" and (given is None or isinstance(given, str)):
                end = "\n" if given is None else given
            elif kw.arg != "flush":
                raise Unread  # file=sys.stderr, **kwargs
        if any(isinstance(a, ast.Starred) for a in call.args):
            raise Unread
        text = sep.join(to_str(self.value(a)) for a in call.args) + end
        self.length += len(text)
        if self.length > MAX_TEXT:
            raise Unread
        self.out.append(text)

    def value(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bytes) or node.value is Ellipsis:
                raise Unread
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in self.names:
                raise Unread
            return self.names[node.id]
        if isinstance(node, ast.Dict):
            out: dict[Any, Any] = {}
            for k, v in zip(node.keys, node.values, strict=True):
                value = self.value(v)
                if k is None:
                    if not isinstance(value, dict):
                        raise Unread
                    out.update(value)
                    continue
                key = self.value(k)
                if not plain(key) or isinstance(key, list | dict):
                    raise Unread
                out[key] = value
            return bounded(out, self.work)
        if isinstance(node, ast.List | ast.Tuple):
            if any(isinstance(e, ast.Starred) for e in node.elts):
                raise Unread
            items = [self.value(e) for e in node.elts]
            return bounded(items if isinstance(node, ast.List) else tuple(items), self.work)
        if isinstance(node, ast.JoinedStr):
            return self.fstring(node)
        if isinstance(node, ast.Attribute):
            return self.attribute(self.value(node.value), node.attr)
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
            bounds = [None if b is None else self.value(b)
                      for b in (node.slice.lower, node.slice.upper, node.slice.step)]  # fmt: skip
            if not all(b is None or (isinstance(b, int) and not isinstance(b, bool))
                       for b in bounds) or bounds[2] == 0:  # fmt: skip
                raise Unread
            return self.subscript(self.value(node.value), slice(*bounds))
        if isinstance(node, ast.Subscript):
            return self.subscript(self.value(node.value), self.value(node.slice))
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.BinOp):
            return self.binop(node)
        if isinstance(node, ast.UnaryOp):
            operand = self.value(node.operand)
            if isinstance(operand, Hole):
                return Hole(operand.what, False)
            if isinstance(node.op, ast.Not) and plain(operand):
                return not operand
            if isinstance(node.op, ast.USub | ast.UAdd) and number(operand):
                return -operand if isinstance(node.op, ast.USub) else +operand
            raise Unread
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left, right = self.value(node.left), self.value(node.comparators[0])
            if isinstance(node.ops[0], ast.Eq | ast.NotEq) and plain(left) and plain(right):
                return (left == right) == isinstance(node.ops[0], ast.Eq)
        raise Unread

    def fstring(self, node: ast.JoinedStr) -> Any:
        parts: list[str] = []
        for part in node.values:
            if isinstance(part, ast.Constant) and isinstance(part.value, str):
                parts.append(part.value)
                continue
            if not isinstance(part, ast.FormattedValue) or part.format_spec is not None:
                raise Unread
            value = self.value(part.value)
            if isinstance(value, Hole):
                return Hole(value.what, True)
            if part.conversion not in (-1, ord("s")) or not plain(value):
                raise Unread
            parts.append(to_str(value))
        return bounded("".join(parts), self.work)

    def attribute(self, base: Any, name: str) -> Any:
        if isinstance(base, _Module) and base.name in ("json", "os", "sys"):
            return _Attr(base.name, name)
        if base == _Attr("os", "environ") and name == "get":
            return _Attr("os.environ", "get")
        raise Unread

    def subscript(self, base: Any, key: Any) -> Any:
        if base == _Attr("sys", "argv"):
            base = self.argv
        if base == _Attr("os", "environ"):
            if not isinstance(key, str):
                raise Unread
            is_set, value = self.env(key)
            if not is_set:
                raise Unread  # KeyError: the program fails
            return Hole("$" + key, True) if value is None else value
        if isinstance(base, Hole) or isinstance(key, Hole):
            raise Unread
        if isinstance(base, list | tuple | str) and isinstance(key, slice):
            return base[key]  # a slice of a known sequence (sys.argv[1:5])
        if isinstance(base, list | tuple | str) and isinstance(key, int):
            if not -len(base) <= key < len(base):
                raise Unread  # IndexError
            return base[key]
        if isinstance(base, dict) and plain(key) and key in base:
            return base[key]
        raise Unread

    def call(self, node: ast.Call) -> Any:
        func = self.value(node.func) if not isinstance(node.func, ast.Name) else None
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if any(isinstance(a, ast.Starred) for a in node.args) or any(
            k.arg is None for k in node.keywords
        ):
            raise Unread
        args = [self.value(a) for a in node.args]
        kwargs = {k.arg: self.value(k.value) for k in node.keywords if k.arg is not None}
        if name is not None and isinstance(self.names.get(name), _Function):
            return Hole(self.named, False)
        if name is not None and name in self.names:
            func = self.names[name]
        if func == _Attr("json", "dumps") and len(args) == 1:
            return dumps(args[0], kwargs)
        if func in (_Attr("os", "getenv"), _Attr("os.environ", "get")):
            if kwargs or not 1 <= len(args) <= 2 or not isinstance(args[0], str):
                raise Unread
            is_set, value = self.env(args[0])
            if not is_set:
                return args[1] if len(args) == 2 else None
            return Hole("$" + args[0], True) if value is None else value
        if name in ("int", "float", "str") and name not in self.names and not kwargs:
            return convert(name, args)
        raise Unread

    def binop(self, node: ast.BinOp) -> Any:
        left, right = self.value(node.left), self.value(node.right)
        if isinstance(left, Hole) or isinstance(right, Hole):
            hole_ = left if isinstance(left, Hole) else right
            return Hole(hole_.what, isinstance(node.op, ast.Add) and isinstance(left, str))
        if isinstance(node.op, ast.Add) and isinstance(left, str) and isinstance(right, str):
            return bounded(left + right, self.work)
        if not (number(left) and number(right)):
            raise Unread
        ops: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
            ast.Add: lambda a, b: a + b,
            ast.Sub: lambda a, b: a - b,
            ast.Mult: lambda a, b: a * b,
            ast.Div: lambda a, b: a / b,
            ast.FloorDiv: lambda a, b: a // b,
            ast.Mod: lambda a, b: a % b,
        }
        op = ops.get(type(node.op))
        if op is None:
            raise Unread  # ** and the bit operators
        try:
            out = op(left, right)
        except (ZeroDivisionError, OverflowError) as e:
            raise Unread from e
        if abs(out) > MAX_NUMBER or (isinstance(out, float) and not math.isfinite(out)):
            raise Unread
        return out


def _called(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name


def _prints(fn: ast.FunctionDef) -> bool:
    """The function may write to the output: it calls ``print`` or names ``stdout``."""
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and node.id in ("print", "exec", "eval"):
            return True
        if isinstance(node, ast.Attribute) and node.attr in ("stdout", "system", "write"):
            return True
    return False
