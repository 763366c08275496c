"""A route's blocking work (sync Redis calls, graph compilation) off the event loop.

On the server's own thread pool.

A plain executor hop that carries the request's context variables (its headers, its user).
Starlette's `run_in_threadpool` does the same through AnyIO's capacity limiter and cancel
scopes, which cost the API more CPU per hop than the work of a short route (measured with
`bench.server`: about a tenth of the API's CPU, at three hops per `runs.wait`).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")
POOL_THREADS = 40  # as AnyIO's default limiter, which FastAPI's own sync routes still use
_pool = ThreadPoolExecutor(max_workers=POOL_THREADS, thread_name_prefix="route")


async def offload(fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """`fn(*args, **kwargs)` on the pool, awaited; its exception is raised here."""
    context = contextvars.copy_context()
    call = functools.partial(context.run, fn, *args, **kwargs)
    return await asyncio.get_running_loop().run_in_executor(_pool, call)
