"""Drive an I/O-free operation (a generator of requests) with a sync or async answerer.

The savers and the memory stores share this: an operation yields a request (a batch of
Redis commands, texts to embed), gets the reply sent back, and returns its result.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def drive(op: Generator[R, Any, T], answer: Callable[[R], Any]) -> T:
    """Run `op` to completion, answering each request with `answer`."""
    try:
        request = next(op)
        while True:
            request = op.send(answer(request))
    except StopIteration as stop:
        result: T = stop.value
        return result


async def adrive(op: Generator[R, Any, T], answer: Callable[[R], Awaitable[Any]]) -> T:
    """`drive` with an awaitable answerer."""
    try:
        request = next(op)
        while True:
            request = op.send(await answer(request))
    except StopIteration as stop:
        result: T = stop.value
        return result


def stream(
    op: Generator[Any, Any, None], is_request: Callable[[Any], bool], answer: Callable[[Any], Any]
) -> Iterator[Any]:
    """Run a streaming operation: requests are answered, anything else is passed out."""
    reply = None
    while True:
        try:
            item = op.send(reply)
        except StopIteration:
            return
        if is_request(item):
            reply = answer(item)
        else:
            reply = None
            yield item


async def astream(
    op: Generator[Any, Any, None],
    is_request: Callable[[Any], bool],
    answer: Callable[[Any], Awaitable[Any]],
) -> AsyncIterator[Any]:
    """`stream` with an awaitable answerer."""
    reply = None
    while True:
        try:
            item = op.send(reply)
        except StopIteration:
            return
        if is_request(item):
            reply = await answer(item)
        else:
            reply = None
            yield item
