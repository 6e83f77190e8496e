"""The breakpoint and watch language: a small, safe subset of Python expressions over tensors.

An expression is parsed once with ``ast``, checked against a whitelist, and turned into a tree of
closures; nothing is ever handed to ``eval``. What it may use:

* names: ``i`` / ``iteration`` (the iteration that just finished), ``cond`` (the body condition it
  produced; false means the loop is about to end), ``trip_count``, ``loop`` (the loop's path), every
  body Parameter, Result and node by name (``h``, ``body_acc``), and any name through
  ``t["name with spaces"]``; a name with dots and a number in it, as PyTorch's exporter makes
  them (``h.25``, ``x.1``, ``encoder.layer.0``), may be written as it is: it cannot mean anything
  else, and reads as ``t["h.25"]``;
* numbers, strings, ``True``/``False``, arithmetic, comparisons, ``and``/``or``/``not``, ``x if c else y``,
  indexing and slicing (``h[0, :3]``, ``h[..., -1]``), the attribute ``.shape``;
* the functions ``any all isnan isinf isfinite abs min max mean sum norm shape size len changed``,
  and ``.any() .all() .sum() .mean() .min() .max()`` written as methods (``isnan(h).any()``);
* ONNX sequences (lists of tensors): ``len(seq)``, ``seq[k]`` (a tensor, ``seq[-1][0, :3]``),
  ``seq[1:]`` (a sequence), ``changed(seq)``.

``changed(x)`` is true when ``x`` differs from its value at the previous iteration of the same loop
execution (false at its first iteration, or when that iteration has left the history), which makes
"break when x changes" one word. It keeps no state: the answer depends only on the iteration, so it
is the same when the iteration is reached again by stepping back, by replay, or after a restart.

Limits, so that no expression can hang loopdbg or exhaust its memory: at most ``MAX_LENGTH``
characters and ``MAX_DEPTH`` levels of nesting (refused when parsed); a power of integers whose
result would pass ``MAX_DIGITS`` decimal digits, a string or list repeated past ``MAX_ITEMS``
items, and an array bigger than its operands (broadcasting ``x[None] * x[:, None]``, ``@``,
min/max stacking their arguments) past what is left of the run's ``--max-memory`` (``MAX_BYTES``
without one), are refused when evaluated, before the array is made (``expr_limits``).
"""

from __future__ import annotations

import ast
import operator
import re
from typing import Any, Callable

import numpy as np

from loopdbg.debug.dotted import quote_dotted_names
from loopdbg.debug.expr_limits import ExprError, fits, grows, power, times
from loopdbg.debug.values import same_value

MAX_LENGTH = 2000          # characters of an expression
MAX_DEPTH = 64             # nesting of its syntax tree (a + b + c nests one level per term)
RESERVED = ("i", "iteration", "cond", "trip_count", "loop", "t", "True", "False", "true", "false")


def _reduce(fn):
    def call(*args):
        if len(args) == 1:
            return fn(np.asarray(args[0]))
        fits(sum(np.asarray(a).nbytes for a in args), "stacking the arguments of min/max")
        return fn(np.asarray([np.asarray(a).item() if np.size(a) == 1 else a for a in args]))
    return call


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "any": lambda x: bool(np.any(x)),
    "all": lambda x: bool(np.all(x)),
    "isnan": np.isnan,
    "isinf": np.isinf,
    "isfinite": np.isfinite,
    "abs": np.abs,
    "min": _reduce(np.min),
    "max": _reduce(np.max),
    "mean": lambda x: np.mean(x),
    "sum": lambda x: np.sum(x),
    "norm": lambda x: float(np.linalg.norm(np.asarray(x, dtype=np.float64).ravel())),
    "shape": lambda x: _shape(x),
    "size": lambda x: int(np.size(_tensor(x, "size()"))),
    "len": lambda x: _len(x),
}

# Methods written the numpy way (``isnan(h).any()``) mean the function of the same name.
METHODS = ("any", "all", "sum", "mean", "min", "max")

_BINOPS = {ast.Add: grows(operator.add), ast.Sub: grows(operator.sub),
           ast.Mult: grows(times), ast.Div: grows(operator.truediv),
           ast.FloorDiv: grows(operator.floordiv), ast.Mod: grows(operator.mod),
           ast.Pow: grows(power), ast.MatMult: grows(operator.matmul, matmul=True)}
_CMPOPS = {ast.Eq: grows(operator.eq), ast.NotEq: grows(operator.ne),
           ast.Lt: grows(operator.lt), ast.LtE: grows(operator.le),
           ast.Gt: grows(operator.gt), ast.GtE: grows(operator.ge)}
_UNOPS = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: lambda x: not _truth(x),
          ast.Invert: operator.invert}

_REFUSED = {
    ast.Lambda: "lambdas", ast.ListComp: "comprehensions", ast.SetComp: "comprehensions",
    ast.DictComp: "comprehensions", ast.GeneratorExp: "generator expressions",
    ast.Await: "await", ast.Yield: "yield", ast.YieldFrom: "yield", ast.NamedExpr: "assignments (:=)",
    ast.JoinedStr: "f-strings", ast.Starred: "star-arguments", ast.Dict: "dict displays",
    ast.Set: "set displays",
}


def _truth(x) -> bool:
    """Truth of a value: arrays must hold one element (say any()/all() otherwise)."""
    if isinstance(x, np.ndarray) and x.size != 1:
        raise ValueError(f"the truth of an array of shape {x.shape} is ambiguous; use any(...) or all(...)")
    return bool(x)


class Lookup:
    """What expressions read names from; the session gives one bound to the current iteration."""

    def name(self, name: str) -> Any:  # pragma: no cover - interface
        raise NotImplementedError

    def previous(self) -> "Lookup | None":
        """The names of the previous iteration of the same loop execution (for ``changed``)."""
        return None

    def value(self, name: str) -> Any:
        """A model value by name, never a built-in (``t["i"]``: the model's own ``i``)."""
        return self.name(name)


def _iteration_equals(node: ast.AST) -> int | None:
    """K when the expression is ``i == K`` (or ``iteration == K``), the usual breakpoint: the
    debugger's hot loop then compares the iteration itself (``i`` is always the built-in)."""
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq) \
            and isinstance(node.left, ast.Name) and node.left.id in ("i", "iteration"):
        const = node.comparators[0]
        if isinstance(const, ast.Constant) and type(const.value) is int:
            return const.value
    return None


class Expression:
    """A compiled expression: ``expr.evaluate(lookup)``; ``expr.names`` lists the model names it reads."""

    def __init__(self, text: str):
        self.text = text.strip()
        if not self.text:
            raise ExprError("the expression is empty.")
        if len(self.text) > MAX_LENGTH:
            raise ExprError(f"the expression is {len(self.text):,} characters long; loopdbg "
                            f"expressions may have at most {MAX_LENGTH:,}.")
        try:
            tree = ast.parse(quote_dotted_names(self.text), mode="eval")
        except SyntaxError as exc:
            where = f" at column {exc.offset}" if exc.offset else ""
            hint = ""
            if re.search(r"(?<![=!<>])=(?!=)", self.text):
                hint = " (to compare, write == : i == 3)"
            raise ExprError(f"'{self.short}' is not a valid expression{where}: {exc.msg}"
                            f"{hint}.") from None
        except (RecursionError, MemoryError):
            raise self._too_deep() from None
        if _depth(tree.body) > MAX_DEPTH:
            raise self._too_deep()
        self.names: set[str] = set()
        self.quoted: set[str] = set()      # the names read as t["name"]: model values only
        self.bare: set[str] = set()        # the names written plainly (a built-in wins)
        self._fn = self._compile(tree.body)
        self.iteration_equals = _iteration_equals(tree.body)

    @property
    def short(self) -> str:
        """The text as messages quote it: cut after 60 characters."""
        return self.text if len(self.text) <= 60 else self.text[:57] + "..."

    @property
    def function(self) -> Callable[[Lookup], Any]:
        """The compiled expression: ``function(lookup)`` is ``evaluate(lookup)`` without the
        method call (the debugger's hot loop calls it per iteration)."""
        return self._fn

    def evaluate(self, lookup: Lookup) -> Any:
        return self._fn(lookup)

    def truth(self, lookup: Lookup) -> bool:
        return _truth(self._fn(lookup))

    def __repr__(self) -> str:
        return f"Expression({self.text!r})"

    def _too_deep(self) -> ExprError:
        return ExprError(f"the expression nests more than {MAX_DEPTH} levels deep (a + b + c "
                         f"counts one level per term); write it in smaller pieces.")

    # -- compiling ----------------------------------------------------------------------------
    def _refuse(self, node: ast.AST, what: str) -> ExprError:
        col = getattr(node, "col_offset", None)
        where = f" (column {col + 1})" if col is not None else ""
        return ExprError(f"'{self.short}': {what}{where} is not allowed in loopdbg expressions.")

    def _compile(self, node: ast.AST) -> Callable:
        method = getattr(self, f"_c_{type(node).__name__}", None)
        if method is None:
            what = _REFUSED.get(type(node), f"'{type(node).__name__}'")
            raise self._refuse(node, what)
        return method(node)

    def _c_Constant(self, node):
        value = node.value
        if not isinstance(value, (int, float, bool, str, type(None), type(Ellipsis))):
            raise self._refuse(node, f"the constant {value!r}")
        return lambda env: value

    def _c_Name(self, node):
        name = node.id
        if name in ("True", "true"):
            return lambda env: True
        if name in ("False", "false"):
            return lambda env: False
        if name in FUNCTIONS or name == "changed":
            raise self._refuse(node, f"the function '{name}' used without calling it")
        if name.startswith("__"):
            raise self._refuse(node, f"the name '{name}'")
        if name == "t":
            raise self._refuse(node, "'t' on its own (write t[\"name\"])")
        self.names.add(name)
        self.bare.add(name)
        return lambda env: env.name(name)

    def _c_Subscript(self, node):
        if isinstance(node.value, ast.Name) and node.value.id == "t":
            key = node.slice
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                raise self._refuse(node, "t[...] with anything but a string")
            name = key.value
            self.names.add(name)
            self.quoted.add(name)
            return lambda env: env.value(name)
        value = self._compile(node.value)
        index = self._compile(node.slice)
        is_const, key = _constant(node.slice)
        if is_const:                                  # h[0]: one call less per evaluation
            return lambda env: _subscript(value(env), key)
        return lambda env: _subscript(value(env), index(env))

    def _c_Slice(self, node):
        parts = [self._compile(p) if p is not None else (lambda env: None)
                 for p in (node.lower, node.upper, node.step)]
        lo, hi, st = parts
        return lambda env: slice(_index(lo(env)), _index(hi(env)), _index(st(env)))

    def _c_Tuple(self, node):
        items = [self._compile(e) for e in node.elts]
        return lambda env: tuple(_index(f(env)) for f in items)

    def _c_List(self, node):
        # A list stays a list, so h[[0, 2]] picks rows 0 and 2 (as in numpy), unlike h[0, 2].
        items = [self._compile(e) for e in node.elts]
        return lambda env: [_index(f(env)) for f in items]

    def _c_Attribute(self, node):
        if node.attr != "shape":
            error = self._refuse(node, f"the attribute '.{node.attr}' (only .shape is)")
            dotted = ast.unparse(node)
            if re.fullmatch(r"[A-Za-z_][\w.]*", dotted):     # h.dtype, or a model's "layer.weight"
                error = ExprError(f"{str(error).rstrip('.')}; if '{dotted}' is the name of a "
                                  f"model value, write t[\"{dotted}\"].")
            raise error
        value = self._compile(node.value)
        return lambda env: _shape(value(env))

    def _c_Call(self, node):
        if isinstance(node.func, ast.Attribute) and node.func.attr in METHODS:
            return self._method(node)
        if not isinstance(node.func, ast.Name):
            raise self._refuse(node, "calling anything but a listed function")
        name = node.func.id
        if node.keywords:
            raise self._refuse(node, "keyword arguments")
        args = [self._compile(a) for a in node.args]
        if name == "changed":
            if len(args) != 1:
                raise self._refuse(node, "changed() with other than one argument")
            return _changed(args[0])
        fn = FUNCTIONS.get(name)
        if fn is None:
            known = ", ".join(sorted(list(FUNCTIONS) + ["changed"]))
            raise ExprError(f"'{self.short}': the function '{name}' is not allowed; the functions "
                            f"are {known}.")
        if not args:
            raise self._refuse(node, f"{name}() without an argument")
        if len(args) == 1:
            a0 = args[0]
            return lambda env: fn(a0(env))
        return lambda env: fn(*[a(env) for a in args])

    def _method(self, node):
        """``x.any()``, ``x.all()``, ``x.sum()``, ...: the listed function applied to ``x``."""
        if node.args or node.keywords:
            raise self._refuse(node, f"arguments to .{node.func.attr}()")
        fn = FUNCTIONS[node.func.attr]
        value = self._compile(node.func.value)
        return lambda env: fn(value(env))

    def _c_BinOp(self, node):
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise self._refuse(node, f"the operator {type(node.op).__name__}")
        left, right = self._compile(node.left), self._compile(node.right)
        return lambda env: op(left(env), right(env))

    def _c_UnaryOp(self, node):
        op = _UNOPS[type(node.op)]
        operand = self._compile(node.operand)
        return lambda env: op(operand(env))

    def _c_BoolOp(self, node):
        values = [self._compile(v) for v in node.values]
        if isinstance(node.op, ast.And):
            def run_and(env):
                for v in values:
                    if not _truth(v(env)):
                        return False
                return True
            return run_and

        def run_or(env):
            for v in values:
                if _truth(v(env)):
                    return True
            return False
        return run_or

    def _c_Compare(self, node):
        ops = []
        for op in node.ops:
            fn = _CMPOPS.get(type(op))
            if fn is None:
                raise self._refuse(node, f"the comparison {type(op).__name__}")
            ops.append(fn)
        first = self._compile(node.left)
        rest = [self._compile(c) for c in node.comparators]
        if len(ops) == 1:
            op, right = ops[0], rest[0]
            is_const, value = _constant(node.comparators[0])
            if is_const:                              # `i == 7`: one call less per evaluation
                left = node.left
                if isinstance(left, ast.Name) and left.id in self.bare:
                    name = left.id                    # ... and `name == 7` two calls less
                    return lambda env: op(env.name(name), value)
                return lambda env: op(first(env), value)
            return lambda env: op(first(env), right(env))

        def chain(env):
            left = first(env)
            for op, r in zip(ops, rest):
                right = r(env)
                if not _truth(op(left, right)):
                    return False
                left = right
            return True
        return chain

    def _c_IfExp(self, node):
        test, body, orelse = (self._compile(n) for n in (node.test, node.body, node.orelse))
        return lambda env: body(env) if _truth(test(env)) else orelse(env)


def _depth(root: ast.AST) -> int:
    """The nesting depth of a syntax tree, walked without recursion."""
    deepest, todo = 0, [(root, 1)]
    while todo:
        node, d = todo.pop()
        deepest = max(deepest, d)
        if deepest > MAX_DEPTH:
            break
        todo.extend((child, d + 1) for child in ast.iter_child_nodes(node))
    return deepest


def _index(x):
    """Indices from tensors: a one-element integer array is an int."""
    if isinstance(x, np.ndarray) and x.size == 1 and x.dtype.kind in "iu":
        return int(x.reshape(()))
    if isinstance(x, np.integer):
        return int(x)
    return x


def _tensor(x, what: str):
    """``x`` where a tensor is needed: a sequence or an empty optional is an error saying so."""
    if isinstance(x, list):
        raise ValueError(f"{what} of a sequence of {len(x)} tensors: use len(...) or index it")
    if x is None:
        raise ValueError(f"{what} of an empty optional")
    return x


def _shape(x) -> tuple:
    return tuple(np.shape(_tensor(x, "the shape")))


def _len(x) -> int:
    """A sequence's length, or a tensor's first dimension (as Python's len)."""
    if isinstance(x, list):
        return len(x)
    x = np.asarray(_tensor(x, "len()"))
    if x.ndim == 0:
        raise ValueError("len() of a scalar")
    return int(x.shape[0])


def _constant(node: ast.AST) -> tuple[bool, Any]:
    """(True, value) for a number or string written in the expression (``7``, ``-1e30``); the
    compiled code then uses the value itself. The node has been compiled (checked) already."""
    if isinstance(node, ast.Constant):
        return True, node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)) and \
            isinstance(node.operand, ast.Constant) and type(node.operand.value) in (int, float):
        v = node.operand.value
        return True, -v if isinstance(node.op, ast.USub) else v
    return False, None


def _subscript(value, index):
    """``value[index]``: numpy indexing of a tensor; a sequence takes one position (a tensor)
    or a slice (a sequence)."""
    if type(value) is np.ndarray:                 # the usual case first
        return value[index]
    if isinstance(value, list):
        if isinstance(index, slice) or isinstance(index, (int, np.integer)):
            return value[index]
        raise ValueError("a sequence is indexed by one position or a slice: seq[k][...] indexes "
                         "its tensor")
    return np.asarray(_tensor(value, "indexing"))[index]


def _changed(arg: Callable) -> Callable:
    def run(env):
        prev = env.previous()
        if prev is None:
            return False
        return not same_value(arg(prev), arg(env))
    return run


def name_expression(name: str) -> str:
    """The expression that reads the model value ``name``: the name itself when it is one, else
    ``t["name"]`` (a name with spaces, slashes or brackets, or one a built-in would hide)."""
    import json
    import keyword

    if name.isidentifier() and not keyword.iskeyword(name) and name not in RESERVED \
            and not name.startswith("__") and name not in FUNCTIONS:
        return name
    return f"t[{json.dumps(name, ensure_ascii=False)}]"
