"""Property tests: calculate equals Python's arithmetic, and only CalculatorError escapes."""

from __future__ import annotations

import contextlib
import math
import operator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphwright.tools.calculator import CalculatorError, calculate

# Slow: property tests over random expression trees
pytestmark = pytest.mark.slow

OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}

numbers = st.one_of(
    st.integers(min_value=0, max_value=10**6),
    st.floats(min_value=0, max_value=1e6, allow_nan=False, allow_infinity=False),
)


def trees() -> st.SearchStrategy[Any]:
    return st.recursive(
        numbers,
        lambda kids: st.one_of(
            st.tuples(st.sampled_from(sorted(OPS)), kids, kids),
            st.tuples(st.sampled_from(["u+", "u-"]), kids),
        ),
        max_leaves=12,
    )


def render(tree: Any) -> str:
    if isinstance(tree, tuple) and len(tree) == 3:
        return f"({render(tree[1])} {tree[0]} {render(tree[2])})"
    if isinstance(tree, tuple):
        return f"{tree[0][1]}{render(tree[1])}"
    return repr(tree)


def value(tree: Any) -> float | int:
    """Python's own arithmetic on the tree, without eval.

    An infinite intermediate counts as overflow: the calculator refuses it rather
    than let `0 / inf` turn it into a plausible-looking 0.0.
    """
    if isinstance(tree, tuple) and len(tree) == 3:
        result = OPS[tree[0]](value(tree[1]), value(tree[2]))
        if isinstance(result, float) and not math.isfinite(result):
            raise OverflowError
        return result
    if isinstance(tree, tuple):
        inner = value(tree[1])
        return inner if tree[0] == "u+" else -inner
    return tree


@settings(max_examples=3000, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(trees())
def test_random_expression_trees_match_python_arithmetic(tree: Any) -> None:
    text = render(tree)
    try:
        expected = value(tree)
        valid = len(text) <= 200 and (not isinstance(expected, float) or math.isfinite(expected))
    except (ZeroDivisionError, OverflowError):
        valid = False
    if not valid:
        with pytest.raises(CalculatorError):
            calculate(text)
        return
    assert calculate(text) == expected


@settings(max_examples=3000, deadline=None)
@given(st.text(max_size=220))
def test_any_string_gives_a_number_or_a_calculator_error(text: str) -> None:
    try:
        result = calculate(text)
    except CalculatorError:
        return
    assert type(result) in (int, float)


@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet="0123456789+-*/(). eE_x", max_size=200))
def test_arithmetic_alphabet_strings_never_escape_another_error(text: str) -> None:
    with contextlib.suppress(CalculatorError):
        calculate(text)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("1/0", "division by zero"),
        ("2**8", "unsupported"),
        ("__import__('os')", "unsupported"),
        ("a + 1", "unsupported"),
        ("(1).real", "unsupported"),
        ("[1][0]", "unsupported"),
        ("1e308 * 10", "too large"),
        ("-" * 100 + "1", "deeper"),
        ("1" * 201, "longer than 200"),
        ("", "empty"),
        ("True + 1", "unsupported"),
    ],
)
def test_forbidden_or_impossible_expressions_say_why(text: str, words: str) -> None:
    with pytest.raises(CalculatorError, match=words):
        calculate(text)
