"""Safe arithmetic on an AST: numbers, + - * /, parentheses, unary + -. Never `eval`."""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable

MAX_LENGTH = 200
MAX_DEPTH = 60

Number = int | float

_BINARY: dict[type[ast.operator], Callable[[Number, Number], Number]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}
_UNARY: dict[type[ast.unaryop], Callable[[Number], Number]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}


class CalculatorError(ValueError):
    """The expression is not allowed or cannot be computed; the message says why."""


def calculate(expression: str) -> Number:
    """Evaluate arithmetic safely: numbers, + - * / and parentheses, bounded in size."""
    if not isinstance(expression, str):
        raise CalculatorError("the expression must be a string")
    if len(expression) > MAX_LENGTH:
        raise CalculatorError(f"the expression is longer than {MAX_LENGTH} characters")
    if not expression.strip():
        raise CalculatorError("the expression is empty")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        raise CalculatorError(f"not an arithmetic expression: {expression!r}") from exc
    return _check(_eval(tree.body, 0))


def _eval(node: ast.AST, depth: int) -> Number:
    if depth > MAX_DEPTH:
        raise CalculatorError(f"the expression is nested deeper than {MAX_DEPTH} levels")
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        number: Number = node.value  # type: ignore[assignment]  # narrowed by type() above
        return _check(number)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left, depth + 1), _eval(node.right, depth + 1)
        if isinstance(node.op, ast.Div) and right == 0:
            raise CalculatorError("division by zero")
        try:
            return _check(_BINARY[type(node.op)](left, right))
        except OverflowError as exc:
            raise CalculatorError("the result is too large") from exc
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand, depth + 1))
    raise CalculatorError(
        f"unsupported element {type(node).__name__}: only numbers, + - * /, parentheses "
        "and unary + - are allowed"
    )


def _check(value: Number) -> Number:
    if isinstance(value, float) and not math.isfinite(value):
        raise CalculatorError("the result is too large")
    if isinstance(value, int) and value.bit_length() > 1024:
        raise CalculatorError("the result is too large")
    return value
