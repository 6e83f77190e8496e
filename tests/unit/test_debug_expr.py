"""The breakpoint/watch expression language: every construct it has, every construct it refuses.

Most tests evaluate against a plain dictionary (``Env``); the last ones evaluate on real iterations
of corpus models through ``EventLookup``, the lookup the session uses.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from loopdbg.debug.breakpoints import Breakpoints, EventLookup
from loopdbg.debug.expr import FUNCTIONS, Expression, ExprError, Lookup
from loopdbg.engine import Engine, IterationDone
from loopdbg.engine.inputs import load_npz
from loopdbg.ir.load import read_model

CORPUS = Path(__file__).resolve().parent.parent / "corpus"


class Env(Lookup):
    """Names from a dict; ``prev`` is the previous iteration's Env (for changed())."""

    def __init__(self, prev=None, **values):
        self.values = values
        self.prev = prev
        self.reads: list[str] = []

    def name(self, name):
        self.reads.append(name)
        try:
            return self.values[name]
        except KeyError:
            raise ExprError(f"'{name}' is not a value") from None

    def previous(self):
        return self.prev


H = np.arange(12, dtype=np.float32).reshape(3, 4)        # [[0..3], [4..7], [8..11]]
ENV = Env(i=3, iteration=3, cond=True, trip_count=10, loop="outer/inner", h=H,
          v=np.array([1.0, -2.0, 3.0], np.float32), n=np.array(2, np.int64),
          idx=np.array([1], np.int64), bad=np.array([1.0, np.nan, np.inf, -np.inf]),
          flags=np.array([True, False]), none=np.zeros((0,), np.float32),
          **{"name with spaces": np.float32(7.5), "cell:1": np.ones((2, 2))})


def ev(text, env=ENV):
    return Expression(text).evaluate(env)


def same(got, want):
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


# -- names ------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, want", [
    ("i", 3), ("iteration", 3), ("cond", True), ("trip_count", 10), ("loop", "outer/inner"),
    ("i == iteration", True), ('loop == "outer/inner"', True),
    ('t["name with spaces"]', 7.5), ('t["cell:1"].shape', (2, 2)), ('t["h"][0, 1]', 1.0),
])
def test_names(text, want):
    assert ev(text) == want


def test_names_are_collected_for_checking():
    e = Expression('h[0, 0] + t["name with spaces"] > i and cond')
    assert e.names == {"h", "name with spaces", "i", "cond"}
    assert Expression("True and false or true").names == set()


def test_unknown_name_at_evaluation_raises_expr_error():
    with pytest.raises(ExprError, match="'nothing' is not a value"):
        ev("nothing + 1")


# -- constants ----------------------------------------------------------------------------------
@pytest.mark.parametrize("text, want", [
    ("3", 3), ("-3", -3), ("2.5", 2.5), ("1e30", 1e30), ("1_000", 1000), ("0x10", 16),
    ("True", True), ("False", False), ("true", True), ("false", False), ("None", None),
    ('"text"', "text"), ("'single'", "single"),
])
def test_constants(text, want):
    assert ev(text) == want


# -- arithmetic, comparisons, logic -------------------------------------------------------------
@pytest.mark.parametrize("text, want", [
    ("1 + 2 * 3", 7), ("(1 + 2) * 3", 9), ("7 - 10", -3), ("7 / 2", 3.5), ("7 // 2", 3),
    ("7 % 4", 3), ("2 ** 10", 1024), ("-i", -3), ("+i", 3), ("~n", -3), ("- -i", 3),
    ("i + n", 5), ("n * 1.5", 3.0),
])
def test_arithmetic(text, want):
    assert ev(text) == want


def test_arithmetic_on_tensors_and_matmul():
    same(ev("h * 2 - 1"), H * 2 - 1)
    same(ev("v @ v"), 14.0)
    same(ev("h[:, :3] @ v"), H[:, :3] @ np.array([1, -2, 3], np.float32))


@pytest.mark.parametrize("text, want", [
    ("i == 3", True), ("i != 3", False), ("i < 4", True), ("i <= 3", True), ("i > 3", False),
    ("i >= 3", True), ("0 <= i < 4", True), ("0 <= i < 3", False), ("1 < 2 < 3 < i", False),
    ("h[1, 0] == 4", True),
])
def test_comparisons(text, want):
    assert bool(ev(text)) is want


def test_comparison_of_tensors_is_elementwise():
    same(ev("v > 0"), [True, False, True])


@pytest.mark.parametrize("text, want", [
    ("i == 3 and cond", True), ("i == 3 and not cond", False), ("i == 4 or cond", True),
    ("not cond", False), ("not not cond", True), ("i == 4 or i == 5 or i == 3", True),
    ("(i > 1) and (i < 5) and trip_count == 10", True),
])
def test_logic(text, want):
    assert ev(text) is want


def test_and_or_short_circuit():
    env = Env(i=3)
    assert Expression("i == 4 and undefined > 0").evaluate(env) is False
    assert Expression("i == 3 or undefined > 0").evaluate(env) is True
    assert env.reads == ["i", "i"]


def test_conditional_expression():
    assert ev("1 if cond else 2") == 1
    assert ev("1 if not cond else 2") == 2


def test_truth_of_a_one_element_tensor_is_its_value_and_of_a_bigger_one_is_refused():
    assert Expression("v[0] > 0").truth(ENV) is True
    assert Expression("idx == 1").truth(ENV) is True
    with pytest.raises(ValueError, match=r"ambiguous; use any\(...\) or all\(...\)"):
        Expression("v > 0").truth(ENV)
    with pytest.raises(ValueError, match="ambiguous"):
        ev("v > 0 and cond")
    with pytest.raises(ValueError, match="ambiguous"):
        ev("not v")


# -- indexing, slicing, .shape ------------------------------------------------------------------
@pytest.mark.parametrize("text, want", [
    ("h[1]", H[1]), ("h[1, 2]", H[1, 2]), ("h[-1, -1]", H[-1, -1]), ("h[0, :3]", H[0, :3]),
    ("h[:, 1]", H[:, 1]), ("h[1:, ::2]", H[1:, ::2]), ("h[::-1, 0]", H[::-1, 0]),
    ("h[..., -1]", H[..., -1]), ("h[i - 2]", H[1]), ("h[n]", H[2]), ("h[n, n]", H[2, 2]),
    ("h[0, n:]", H[0, 2:]), ("h[idx, 0]", H[1, 0]), ("h[0][1:3][0]", H[0][1:3][0]),
    ("h[[0, 2]]", H[[0, 2]]), ("h[[0, 2], 1]", H[[0, 2], 1]), ("v[v > 0]", [1.0, 3.0]),
])
def test_indexing_and_slicing(text, want):
    same(ev(text), want)


def test_shape_attribute_and_its_indexing():
    assert ev("h.shape") == (3, 4)
    assert ev("h.shape[1]") == 4
    assert ev("h[0].shape == (4,)") is True
    assert ev("i.shape") == ()
    assert ev("h.shape == [3, 4]") is False          # a list is not the shape tuple, as in Python


# -- functions ------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, want", [
    ("any(v > 2)", True), ("any(v > 5)", False), ("all(v != 0)", True), ("all(v > 0)", False),
    ("any(isnan(bad))", True), ("all(isnan(v))", False), ("sum(isinf(bad))", 2),
    ("sum(isfinite(bad))", 1), ("sum(abs(v))", 6.0), ("min(v)", -2.0), ("max(v)", 3.0),
    ("min(i, 7)", 3), ("max(i, 7, n)", 7), ("max(h[0, 0], v[2])", 3.0), ("mean(v)", 2 / 3),
    ("sum(h)", 66.0), ("sum(h[0])", 6.0), ("norm(v)", np.sqrt(14.0)), ("norm(h)", np.sqrt((H ** 2).sum())),
    ("shape(h)", (3, 4)), ("size(h)", 12), ("size(none)", 0), ("shape(i)", ()),
    ("abs(-i)", 3), ("any(flags)", True), ("all(flags)", False),
])
def test_functions(text, want):
    got = ev(text)
    if isinstance(want, float):
        assert got == pytest.approx(want)
    else:
        assert got == want


def test_elementwise_functions_keep_the_shape():
    same(ev("isnan(bad)"), [False, True, False, False])
    same(ev("isinf(bad)"), [False, False, True, True])
    same(ev("isfinite(bad)"), [True, False, False, False])
    same(ev("abs(v)"), [1.0, 2.0, 3.0])


def test_every_listed_function_is_tested_above():
    assert set(FUNCTIONS) == {"any", "all", "isnan", "isinf", "isfinite", "abs", "min", "max",
                              "mean", "sum", "norm", "shape", "size", "len"}


# -- ONNX sequences (lists of tensors) and empty optionals (None) ------------------------------
SEQ = [np.array([1.0, 2.0], np.float32), np.array([[3.0, 4.0, 5.0]], np.float32)]


@pytest.mark.parametrize("text, want", [
    ("len(s)", 2), ("len(empty)", 0), ("len(h)", 3), ("len(s) == 2 and s[0][1] == 2", True),
    ("s[-1][0, 2]", 5.0), ("s[1].shape", (1, 3)), ("len(s[1:])", 1), ("max(s[0])", 2.0),
])
def test_sequences_have_a_length_and_tensors_by_position(text, want):
    env = Env(s=SEQ, empty=[], h=H)
    assert ev(text, env) == want


@pytest.mark.parametrize("text, message", [
    ("s.shape", "shape of a sequence of 2 tensors"), ("size(s)", "size() of a sequence"),
    ("s[0, 1]", "one position or a slice"), ("len(o)", "len() of an empty optional"),
    ("len(n)", "len() of a scalar"),
])
def test_what_a_sequence_or_an_empty_optional_is_not_is_said(text, message):
    env = Env(s=SEQ, o=None, n=np.array(2))
    with pytest.raises(ValueError, match=re.escape(message)):
        ev(text, env)


def test_changed_compares_sequences_element_by_element():
    first = Env(s=SEQ)
    assert not ev("changed(s)", Env(prev=first, s=[x.copy() for x in SEQ]))
    assert ev("changed(s)", Env(prev=first, s=SEQ + [SEQ[0]]))
    assert ev("changed(s)", Env(prev=first, s=[SEQ[0], SEQ[1] + 1]))
    assert ev("changed(o)", Env(prev=Env(o=None), o=np.zeros(1)))
    assert not ev("changed(o)", Env(prev=Env(o=None), o=None))


# -- changed() ------------------------------------------------------------------------------------
def test_changed_compares_with_the_previous_iteration():
    first = Env(x=np.array([1.0, 2.0]))
    same_again = Env(first, x=np.array([1.0, 2.0]))
    moved = Env(same_again, x=np.array([1.0, 2.5]))
    reshaped = Env(moved, x=np.array([1.0, 2.5, 0.0]))
    nan1 = Env(None, x=np.array([np.nan]))
    nan2 = Env(nan1, x=np.array([np.nan]))
    e = Expression("changed(x)")
    assert [e.evaluate(env) for env in (first, same_again, moved, reshaped, nan2)] == \
        [False, False, True, True, False]


def test_changed_has_no_state_so_the_order_of_evaluation_does_not_matter():
    a = Env(x=0)
    b = Env(a, x=1)
    c = Env(b, x=1)
    e = Expression("changed(x)")
    assert [e.evaluate(env) for env in (c, b, a, b, c, b)] == [False, True, False, True, False,
                                                               True]


def test_changed_of_an_expression_and_nested_changed():
    envs = [Env(x=0)]
    for x in (1, 2, 2, 2, 5):
        envs.append(Env(envs[-1], x=x))
    assert [Expression("changed(x > 1)").evaluate(env) for env in envs] == \
        [False, False, True, False, False, False]
    # changed(x) is F T T F F T, so changed(changed(x)) is true where that flips
    assert [Expression("changed(changed(x))").evaluate(env) for env in envs] == \
        [False, True, False, True, False, True]


# -- refused before any run ---------------------------------------------------------------------
@pytest.mark.parametrize("text, message", [
    ("__import__('os')", "the function '__import__' is not allowed"),
    ("__import__('os').system('true')", "calling anything but a listed function"),
    ("eval('1')", "the function 'eval' is not allowed"),
    ("open('/etc/passwd')", "the function 'open' is not allowed"),
    ("getattr(h, 'shape')", "the function 'getattr' is not allowed"),
    ("foo(h)", "the function 'foo' is not allowed; the functions are abs, all, any, changed"),
    ("h.dtype", "the attribute '.dtype' (only .shape is)"),
    ("h.T", "the attribute '.T' (only .shape is)"),
    ("h.__class__", "the attribute '.__class__'"),
    ("isnan(h).any", "the attribute '.any'"),
    ("h.shape.count(3)", "calling anything but a listed function"),
    ("np.sum(h)", "arguments to .sum()"),
    ("h.tolist()", "calling anything but a listed function"),
    ("h.any(0)", "arguments to .any()"),
    ("(lambda: 1)()", "calling anything but a listed function"),
    ("lambda: 1", "lambdas"),
    ("[x for x in h]", "comprehensions"),
    ("{x for x in h}", "comprehensions"),
    ("{x: 1 for x in h}", "comprehensions"),
    ("sum(x for x in h)", "generator expressions"),
    ("(y := 3)", "assignments (:=)"),
    ('f"{h}"', "f-strings"),
    ("max(*h)", "star-arguments"),
    ("{1: 2}", "dict displays"),
    ("{1, 2}", "set displays"),
    ("sum(h, axis=0)", "keyword arguments"),
    ("changed(h, v)", "changed() with other than one argument"),
    ("changed()", "changed() with other than one argument"),
    ("sum()", "sum() without an argument"),
    ("sum", "the function 'sum' used without calling it"),
    ("changed", "the function 'changed' used without calling it"),
    ("__builtins__", "the name '__builtins__'"),
    ("t", "'t' on its own"),
    ("t[0]", 't[...] with anything but a string'),
    ("t[h]", 't[...] with anything but a string'),
    ("b'bytes'", "the constant b'bytes'"),
    ("1j", "the constant 1j"),
    ("h & v", "the operator BitAnd"),
    ("h | v", "the operator BitOr"),
    ("h ^ v", "the operator BitXor"),
    ("n << 1", "the operator LShift"),
    ("n >> 1", "the operator RShift"),
    ("1 in v", "the comparison In"),
    ("1 not in v", "the comparison NotIn"),
    ("h is None", "the comparison Is"),
    ("h is not None", "the comparison IsNot"),
])
def test_refused_constructs(text, message):
    with pytest.raises(ExprError) as info:
        Expression(text)
    text_of_error = str(info.value)
    assert message in text_of_error
    assert text_of_error.startswith(f"'{text}'")


@pytest.mark.parametrize("text, message", [
    ("", "the expression is empty"),
    ("   ", "the expression is empty"),
    ("i ==", "is not a valid expression"),
    ("x = 1", "is not a valid expression"),
    ("import os", "is not a valid expression"),
    ("i == 3; x", "is not a valid expression"),
    ("yield 1", "is not a valid expression"),
    ("await h", r"await \(column 1\) is not allowed"),
])
def test_statements_and_syntax_errors_are_refused(text, message):
    with pytest.raises(ExprError, match=message):
        Expression(text)


def test_refusal_names_the_column():
    with pytest.raises(ExprError, match=r"the attribute '\.dtype' \(only \.shape is\) \(column 11\)"):
        Expression("i > 0 and h.dtype")


def test_nothing_is_evaluated_while_compiling():
    env = Env(i=1)
    e = Expression("i + 1")
    assert env.reads == []
    assert e.evaluate(env) == 2 and env.reads == ["i"]


# -- names checked against the model, before the run ---------------------------------------------
def test_breakpoints_refuse_names_the_model_does_not_have():
    bps = Breakpoints(known_names={"outer": {"ox", "outer_mul"}, "outer/inner": {"iy", "inner_add"}})
    bps.add("outer_mul[0] > 1 and i == 2")
    bps.add("inner_add[0] > 1", loop="inner")
    bps.add('t["iy"][0] > 0', loop="outer/inner")
    with pytest.raises(ExprError, match="'nope' is not a name in any loop of the model; names there"):
        bps.add("nope > 1")
    with pytest.raises(ExprError, match="'ox' is not a name in loop 'inner'"):
        bps.add("ox[0] > 1", loop="inner")
    with pytest.raises(ExprError, match=r"the model has no loop 'missing'; its loops are outer, "
                                        r"outer/inner"):
        bps.add("i == 1", loop="missing")
    with pytest.raises(ExprError, match="'no such' is not a name"):
        bps.watch('t["no such"]')
    assert len(bps.items) == 3 and bps.watches == {}


def test_refused_breakpoint_leaves_no_trace_and_numbers_go_on():
    bps = Breakpoints()
    assert bps.add("i == 1").number == 1
    with pytest.raises(ExprError):
        bps.add("lambda: 1")
    assert bps.add("i == 2").number == 2
    with pytest.raises(ExprError):
        bps.edit(2, "h.T")
    assert bps.get(2).text == "i == 2"


# -- on real iterations ---------------------------------------------------------------------------
def iterations(case: str) -> list[IterationDone]:
    model = read_model(CORPUS / case / "model.xml")
    return [e for e in Engine(model).run(load_npz(CORPUS / case / "inputs.npz"))
            if isinstance(e, IterationDone)]


def test_every_body_value_of_a_loop_by_name():
    events = iterations("loop_while_iter")
    e = events[2]
    env = EventLookup(e)
    # Parameters, Results and nodes by name; the counter and the condition
    assert Expression("body_iter").evaluate(env) == 2
    same(Expression("body_x").evaluate(env), e.inputs["body_x"])
    same(Expression("Result_5536").evaluate(env), e.outputs["Result_5536"])
    same(Expression("Multiply_5524 + Convert_5525").evaluate(env), e.outputs["Result_5536"])
    assert Expression("Less_5527[0] == cond").evaluate(env)
    assert Expression("i == 2 and iteration == 2 and trip_count == -1 and loop == 'loop'")\
        .evaluate(env) is True
    assert Expression('t["body_limit"][0] == 50').evaluate(env)
    assert Expression("Result_5537 == body_count + 1").evaluate(env)


def test_values_of_a_tensor_iterator_including_a_cells_second_output():
    events = iterations("ti_lstm_forward")
    env = EventLookup(events[1])
    assert Expression("trip_count == 5 and cond and i == 1").evaluate(env) is True
    assert Expression("body_X.shape == (2, 1, 8)").evaluate(env) is True
    assert Expression('all(t["LSTMCell_49589:1"] == Result_49594)').evaluate(env) is True
    assert Expression("all(LSTMCell_49589 == Result_49593)").evaluate(env) is True
    assert Expression("norm(body_H) > 0 and abs(mean(Squeeze_49582)) >= 0").evaluate(env) is True
    with pytest.raises(ExprError, match="'h' is not a value of loop 'lstm_ti'"):
        Expression("h").evaluate(env)


@pytest.mark.parametrize("text, expected", [
    ("isnan(h).any()", True), ("isnan(h).all()", False), ("h.sum() == 3", True),
    ("h.max() == 3", True), ("h.min() == 0", True), ("h.mean() == 1", True),
])
def test_numpy_style_methods_mean_the_listed_functions(text, expected):
    class Values:
        def name(self, name):
            return np.array([0.0, 3.0, np.nan]) if text.startswith("isnan") else np.array([0.0, 3.0])
    if not text.startswith("isnan"):
        class Values:  # noqa: F811 - finite values for the reductions
            def name(self, name):
                return np.array([0.0, 3.0, 0.0])
    assert bool(Expression(text).evaluate(Values())) is expected


# ---- limits: no expression hangs loopdbg or exhausts its memory ------------------------------

@pytest.mark.parametrize("text, message", [
    ("+".join(["i"] * 600), "nests more than 64 levels"),
    ("not " * 5000 + "cond", "characters long"),
    ("not " * 400 + "cond", "nests more than 64 levels"),
    ("h" + "[0]" * 3000, "characters long"),
    ("h" + "[0]" * 100, "nests more than 64 levels"),
    ("-" * 20000 + "1", "characters long"),
    ("(" * 300 + "1" + ")" * 300, "not a valid expression"),
])
def test_huge_or_deep_expressions_are_refused_in_one_sentence(text, message):
    with pytest.raises(ExprError, match=message) as info:
        Expression(text)
    assert "\n" not in str(info.value) and len(str(info.value)) < 300


@pytest.mark.parametrize("text, message", [
    ("10**5000", "would have about 5,000 digits"),
    ("10**10**10", "would have about"),
    ("2**(i + 10**7)", "would have about"),
    ("'a'*10**9", "past the limit of 1,000,000 items"),
    ("10**9 * [0]", "past the limit of 1,000,000 items"),
])
def test_expressions_that_would_hang_or_blow_up_fail_when_evaluated(text, message):
    import time
    start = time.monotonic()
    with pytest.raises(ExprError, match=message):
        Expression(text).evaluate(Env(i=3))
    assert time.monotonic() - start < 1


def test_expressions_within_the_limits_still_work():
    assert Expression("2**64").evaluate(Env()) == 2 ** 64
    assert Expression("'ab' * 3").evaluate(Env()) == "ababab"
    assert Expression("+".join(["i"] * 30)).evaluate(Env(i=2)) == 60


def test_a_loop_name_and_a_colon_scope_a_condition_and_shadowed_builtins_are_named():
    """`rows_loop: i == 2` is `--loop rows_loop`; the built-in i wins over a model value named i,
    which is t["i"] (nested_loop's outer loop counts rows in a Parameter named i)."""
    from loopdbg.debug import Session

    demo = Path(__file__).resolve().parents[2] / "loopdbg" / "demos" / "nested_loop"
    s = Session.open(demo / "model.xml", demo / "inputs.npz")
    bp = s.breakpoints.add("rows_loop: i == 2")
    assert (bp.loop, bp.text) == ("rows_loop", "i == 2")
    assert s.breakpoints.shadowed(bp.condition) == {"i": ["rows_loop"]}
    stop = s.continue_()
    assert (stop.event.path, stop.event.iteration) == ("rows_loop", 2)
    s.restart()
    s.breakpoints.delete(bp.number)
    s.breakpoints.add('t["i"] == 1')                    # the model's own i: rows_loop only
    stop = s.continue_()
    assert (stop.kind, stop.event.path, stop.event.iteration) == ("breakpoint", "rows_loop", 1)
    with pytest.raises(ExprError):
        s.breakpoints.add("no_such_loop: i == 1")
    with pytest.raises(ExprError):
        s.breakpoints.add("x: i == 1", loop="rows_loop")


def test_a_single_equals_sign_hints_at_the_comparison():
    for text in ("i = 3", "i=3 and cond"):
        with pytest.raises(ExprError, match="to compare, write =="):
            Expression(text)
    with pytest.raises(ExprError) as info:
        Expression("i >= (3")
    assert "to compare" not in str(info.value)


@pytest.mark.parametrize("text, k", [
    ("i == 7", 7), ("iteration == 12", 12), ("  i==0 ", 0),
    ("i == 7.0", None), ("i == True", None), ("7 == i", None), ("i != 7", None),
    ("i == 7 == 7", None), ("x == 7", None), ("i == n", None), ("i == 7 and x", None),
])
def test_iteration_equals_marks_only_the_plain_form(text, k):
    """The debugger compares the iteration itself for ``i == K`` (frontier.pull_quiet)."""
    assert Expression(text).iteration_equals == k


@pytest.mark.parametrize("text", ["x[None] * x[:, None]", "x[:, None] + x", "x[None] == x[:, None]",
                                  "x[:, None] @ x[None]", "(x[None] < x[:, None]).any()",
                                  "max(" + ", ".join(["big"] * 300) + ")"])
def test_an_expression_cannot_make_an_array_past_the_memory_budget(text):
    """Outer products of a 20,000-vector would take 1.6 GB (issue 26): refused before they are
    made, in one sentence, when the run has no budget (MAX_BYTES) and within one."""
    from loopdbg.ops import budget

    env = Env(x=np.ones(20_000, np.float32), big=np.ones(1 << 20, np.float32))
    # no budget, whatever a run before this test in the same process left (an engine run
    # started and not run to its end keeps its budget)
    budget.start(None)
    with pytest.raises(ExprError, match="would make an array"):
        ev(text, env)
    budget.start(64 << 20)
    try:
        with pytest.raises(ExprError, match="--max-memory"):
            ev(text, env)
    finally:
        budget.start(None)
    same(ev("x[:3, None] * x[None, :2]", env), np.ones((3, 2), np.float32))   # small: computed


# -- names with dots (issue 30): what PyTorch's exporter calls its values ----------------------
DOTTED = Env(**{"h.25": np.array([0.25, 0.5]), "x.1": np.float32(2.0), "h1.13": np.float32(3.0),
                "x.1.2": np.float32(4.0), "enc.layer.0.weight": np.ones(3), "h": H})


@pytest.mark.parametrize("text, want", [
    ("norm(h.25) > 0.5", True), ("x.1 + h1.13", 5.0), ("x.1.2", 4.0),
    ("h.25.shape", (2,)), ("h.25.sum()", 0.75), ("h.25[1]", 0.5), ("max(h.25)", 0.5),
    ("sum(enc.layer.0.weight)", 3.0), ('t["h.25"][0]', 0.25), ("x.1 > 1 and h[0, 1] == 1", True),
    ('"h.25" == "h.25"', True),           # inside a string: left alone
])
def test_a_dotted_model_name_is_read_as_it_is_written(text, want):
    same(Expression(text).evaluate(DOTTED), want)
    assert Expression(text).names <= set(DOTTED.values) | {"h"}


def test_a_dotted_name_without_a_number_says_how_to_write_it():
    with pytest.raises(ExprError, match=r'is the name of a model value, write t\["layer.weight"\]'):
        Expression("layer.weight > 0")


def test_a_dotted_names_attribute_parts_are_the_languages_methods():
    """``h.25.sum()``: the dotted-name reader leaves the methods expressions allow as methods."""
    from loopdbg.debug import dotted, expr

    assert dotted._NOT_PART == {"shape", *expr.METHODS}
