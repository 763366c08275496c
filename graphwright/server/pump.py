"""A run's frames produced on a thread of their own, so the executor can act on a cancel
while a node is still inside a long model call or tool, not only between chunks.

The executor reads the frames with a timeout and checks the run's signals whenever none
came. A cancelled run's producer is abandoned: it stops at its next chunk, and the
executor moves the thread's fence on first, so whatever the abandoned step still tries to
write (its checkpoint, its tool records, its trace) is refused by the fencing token."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from typing import Any, Literal

Item = tuple[Literal["frames", "error", "end"], Any]


class Pump:
    """Iterate ``make()`` on a daemon thread; hand its items over through a queue."""

    def __init__(self, make: Callable[[], Iterator[Any]], name: str) -> None:
        self._items: queue.Queue[Item] = queue.Queue()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(make,), daemon=True, name=name)
        self._thread.start()

    def _run(self, make: Callable[[], Iterator[Any]]) -> None:
        try:
            produced = make()
            for frames in produced:
                self._items.put(("frames", frames))
                if self._stop.is_set():  # abandoned: leave the graph at this chunk
                    close = getattr(produced, "close", None)
                    if close is not None:
                        close()
                    return
        except BaseException as exc:  # handed to the executor, which decides
            self._items.put(("error", exc))
            return
        self._items.put(("end", None))

    def get(self, timeout_s: float) -> Item | None:
        """The next item, or None when nothing came within ``timeout_s``."""
        try:
            return self._items.get(timeout=timeout_s)
        except queue.Empty:
            return None

    def abandon(self) -> None:
        self._stop.set()
