"""Consuming step streams: the final result of a stream, and a blocking stream made async."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

from graphwright.results import RunResult, StepEvent


def last_result(events: Iterator[StepEvent]) -> RunResult:
    result = None
    for event in events:
        result = event.result or result
    if result is None:  # every path of _run ends with a result event
        raise RuntimeError("the run produced no result")
    return result


async def in_thread(make: Any) -> AsyncIterator[StepEvent]:
    """Drive a blocking iterator in a worker thread and hand its items to the event loop."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

    def pump() -> None:
        try:
            for item in make():
                loop.call_soon_threadsafe(queue.put_nowait, ("item", item))
        except BaseException as exc:
            loop.call_soon_threadsafe(queue.put_nowait, ("error", exc))
        else:
            loop.call_soon_threadsafe(queue.put_nowait, ("done", None))

    task = loop.run_in_executor(None, pump)
    while True:
        kind, value = await queue.get()
        if kind == "item":
            yield value
        elif kind == "error":
            await task
            raise value
        else:
            await task
            return
