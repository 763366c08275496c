"""The answer of a route that waits for a run (`runs.wait`, `runs.join`, a cancel with `wait`).

A newline every few seconds while the run is pending, then its final values as JSON, as the Agent
Server writes them; and what the client's going away does to the run.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import AsyncIterator

import anyio
from fastapi.responses import JSONResponse, Response, StreamingResponse

from graphwright.server.http.launch import Launcher
from graphwright.server.offload import offload
from graphwright.server.schemas.run_bodies import Run
from graphwright_errors import GraphwrightError

# Leading whitespace, which every JSON parser skips: the SDK's `response.json()` reads the
# values after any number of these. The reference writes exactly this byte.
KEEPALIVE = b"\n"
log = logging.getLogger(__name__)


async def waiting(launch: Launcher, run: Run, *, cancel_on_disconnect: bool) -> Response:
    """The run's final values, kept alive while it is pending.

    A run that ends within the first interval is answered as any route answers (an outage is a 503);
    a longer one gets its status line with the first keep-alive, and an outage after that cuts the
    body, as the reference's does: the SDK then reconnects to `Location` (`runs.join`), as it does
    for the reference.
    """
    base = f"/threads/{run.thread_id}/runs/{run.run_id}"
    headers = {"Location": f"{base}/join", "Content-Location": base}
    result = asyncio.ensure_future(outcome(launch, run))
    done, _ = await asyncio.wait({result}, timeout=launch.orch.settings.keepalive_s)
    if done:
        return Response(result.result(), media_type="application/json", headers=headers)
    return StreamingResponse(
        body(launch, run, result, cancel_on_disconnect=cancel_on_disconnect),
        media_type="application/json",
        headers=headers,
    )


async def outcome(launch: Launcher, run: Run) -> bytes:
    """The final values once the run has ended, however long it takes.

    A client that is gone cancels this wait, nothing else ends it early.
    """
    await launch.finished(run, timeout_s=math.inf)
    return bytes(JSONResponse(await launch.output(run)).body)  # encoded as every other answer


async def body(
    launch: Launcher, run: Run, result: asyncio.Future[bytes], *, cancel_on_disconnect: bool
) -> AsyncIterator[bytes]:
    """A keep-alive now and every `keepalive_s` until the outcome is known, then the outcome.

    The client's disconnect cancels this generator (Starlette listens for it) at its wait;
    the outcome's task goes with it, and with `cancel_on_disconnect` the run is cancelled
    (`interrupt`, as the reference does), shielded from the cancellation in progress.
    """
    interval = launch.orch.settings.keepalive_s
    try:
        while not result.done():
            yield KEEPALIVE
            await asyncio.wait({result}, timeout=interval)
        yield result.result()  # raises what the wait raised: the body is cut, as the reference
    finally:
        if not result.done():
            result.cancel()
            if cancel_on_disconnect:
                with anyio.CancelScope(shield=True):
                    await _cancel(launch, run)


async def _cancel(launch: Launcher, run: Run) -> None:
    try:
        await offload(launch.store.cancel, run.thread_id, run.run_id, "interrupt")
    except GraphwrightError as exc:  # Redis down or the run gone: nothing left to stop here
        log.warning("on_disconnect=cancel of run %s failed: %s", run.run_id, exc)
