"""A run's frames produced by a task of their own.

So the executor can act on a cancel while a node is still inside a long model call or tool, not only
between chunks.

The executor reads the frames with a timeout and checks the run's signals whenever none
came. A cancelled run's producer is cancelled: an async node stops at its current
`await`; a sync node, which LangGraph runs in the loop's executor, cannot be stopped,
so the executor moves the thread's fence on first, and whatever the abandoned step still
tries to write (its checkpoint, its tool records, its trace) is refused by the token.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any, Literal

Item = tuple[Literal["frames", "error", "end"], Any]
ABANDON_WAIT_S = 1.0  # how long a cancelled producer gets to run its cleanup


class Pump:
    """Iterate `items` in a task; hand its items over through a queue."""

    def __init__(self, items: AsyncIterator[Any], name: str) -> None:
        self._items: asyncio.Queue[Item] = asyncio.Queue()
        self._task = asyncio.create_task(self._run(items), name=name)

    async def _run(self, items: AsyncIterator[Any]) -> None:
        try:
            async for frames in items:
                self._items.put_nowait(("frames", frames))
        except Exception as exc:  # handed to the executor, which decides
            self._items.put_nowait(("error", exc))
            return
        self._items.put_nowait(("end", None))

    async def get(self, timeout_s: float) -> Item | None:
        """The next item, or None when nothing came within `timeout_s`."""
        with contextlib.suppress(TimeoutError):
            return await asyncio.wait_for(self._items.get(), timeout_s)
        return None

    async def abandon(self) -> None:
        """Cancel the producer, giving its `finally` blocks a moment.

        But never waiting on a sync node that cannot be stopped.
        """
        if not self._task.done():
            self._task.cancel()
            await asyncio.wait({self._task}, timeout=ABANDON_WAIT_S)
