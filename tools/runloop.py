"""The process's run loop: the one asyncio event loop that owns every run of this process.

Graphs run on it through `astream`; sync entry points (`Orchestrator.invoke`, the
sync executor, a sync node calling an async tool) hand their coroutines to it and wait
from their own thread, never starting a loop of their own. It lives in `tools` because
the tool executor, the lowest layer that needs it, may not import the API above it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import queue
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from typing import Any, TypeVar

from graphwright_errors import ConfigurationError

T = TypeVar("T")
EXECUTOR_THREADS = 64  # sync nodes, sync tools' callers and blocking Redis edges of all runs
CLOSE_WAIT_S = 10.0  # how long a reader that stops early waits for the run's cleanup

_guard = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_pid: int | None = None  # the process that started it: a forked child starts its own


def run_loop() -> asyncio.AbstractEventLoop:
    """The process's run loop, started on a daemon thread the first time it is asked for."""
    global _loop, _pid
    with _guard:
        if _loop is None or _loop.is_closed() or _pid != os.getpid():
            loop = asyncio.new_event_loop()
            # LangGraph runs sync nodes in the loop's default executor: size it for many runs.
            loop.set_default_executor(
                concurrent.futures.ThreadPoolExecutor(
                    EXECUTOR_THREADS, thread_name_prefix="gw-run-sync"
                )
            )
            ready = threading.Event()
            threading.Thread(
                target=_serve, args=(loop, ready), daemon=True, name="gw-run-loop"
            ).start()
            ready.wait()
            _loop, _pid = loop, os.getpid()
        return _loop


def size_executor(loop: asyncio.AbstractEventLoop) -> None:
    """Give an application's loop that runs graphs a default executor of the run loop's size.

    LangGraph runs sync nodes in the loop's default executor; asyncio's own holds a few
    threads per core, so runs awaited at once would queue for them where the run loop's runs
    would not. A loop that has its default executor already (the application set or used it)
    keeps it: asyncio keeps which it has in a private field, read here only.
    """
    if getattr(loop, "_default_executor", False) is None:
        loop.set_default_executor(
            concurrent.futures.ThreadPoolExecutor(
                EXECUTOR_THREADS, thread_name_prefix="gw-run-sync"
            )
        )


def _serve(loop: asyncio.AbstractEventLoop, ready: threading.Event) -> None:
    asyncio.set_event_loop(loop)
    loop.call_soon(ready.set)
    loop.run_forever()


def on_run_loop() -> bool:
    """Whether the caller runs on the run loop's own thread (where waiting would deadlock it)."""
    try:
        return asyncio.get_running_loop() is _loop
    except RuntimeError:
        return False


def _refuse_on_loop(what: str) -> None:
    if on_run_loop():
        raise ConfigurationError(
            f"{what} was called on graphwright's run loop, where waiting would block every "
            "run; await its async twin instead"
        )


def submit(coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
    """Start `coro` on the run loop; cancelling the future cancels the coroutine."""
    return asyncio.run_coroutine_threadsafe(coro, run_loop())


def call(coro: Coroutine[Any, Any, T], what: str = "a blocking call") -> T:
    """Run `coro` on the run loop and wait for it from this (other) thread.

    A caller interrupted while it waits (Ctrl-C) cancels the coroutine and waits for its
    `finally` blocks (a lock's release), as `iterate` does.
    """
    if on_run_loop():
        coro.close()
        _refuse_on_loop(what)
    ended = threading.Event()

    async def guarded() -> T:
        try:
            return await coro
        finally:
            ended.set()

    future = submit(guarded())
    try:
        return future.result()
    finally:
        if not future.done():
            future.cancel()
            ended.wait(CLOSE_WAIT_S)


async def hand(coro: Coroutine[Any, Any, T]) -> T:
    """Await `coro` on the run loop from any loop; on the run loop itself, just await it."""
    if on_run_loop():
        return await coro
    future = submit(coro)
    try:
        return await asyncio.wrap_future(future)
    finally:
        future.cancel()  # the caller was cancelled: so is the run (no-op once it is done)


def iterate(make: Callable[[], AsyncIterator[T]], what: str = "a blocking stream") -> Iterator[T]:
    """Drive an async iterator on the run loop and yield its items in this thread.

    One task on the loop iterates it to the end, so the run never waits for a slow reader.
    Closing the returned generator early (the reader stopped, or was interrupted) cancels
    that task and waits for its `finally` blocks (a lock's release) to run.
    """
    _refuse_on_loop(what)
    items: queue.Queue[tuple[bool, Any]] = queue.Queue()
    ended = threading.Event()

    async def drive() -> None:
        try:
            async for item in make():
                items.put((False, item))
        finally:
            ended.set()

    future = submit(drive())
    future.add_done_callback(lambda _: items.put((True, None)))
    try:
        while True:
            done, item = items.get()
            if done:
                future.result()  # the stream's error, if it ended with one
                return
            yield item
    finally:
        if not future.done():
            future.cancel()
            ended.wait(CLOSE_WAIT_S)


async def aiterate(make: Callable[[], AsyncIterator[T]], *, here: bool = False) -> AsyncIterator[T]:
    """The items of an async iterator driven by a task of its own, for a caller on any loop.

    The task runs on the run loop, or with `here` on the caller's loop. Either way it iterates
    to the end whatever the reader does, and a reader that stops early cancels it.
    """
    if on_run_loop():
        async for item in make():
            yield item
        return
    caller = asyncio.get_running_loop()
    items: asyncio.Queue[tuple[bool, Any]] = asyncio.Queue()

    def hand_over(entry: tuple[bool, Any]) -> None:
        if here:
            items.put_nowait(entry)
            return
        with contextlib.suppress(RuntimeError):  # a reader whose loop is gone reads no more
            caller.call_soon_threadsafe(items.put_nowait, entry)

    async def drive() -> None:
        async for item in make():
            hand_over((False, item))

    future: asyncio.Future[None] | concurrent.futures.Future[None]
    future = asyncio.ensure_future(drive()) if here else submit(drive())
    future.add_done_callback(lambda _: hand_over((True, None)))
    try:
        while True:
            done, item = await items.get()
            if done:
                future.result()
                return
            yield item
    finally:
        if not future.done():
            future.cancel()  # the caller stopped reading, or was cancelled: so is the run
