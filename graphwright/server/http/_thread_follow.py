"""Following a thread for the thread-centric streaming protocol.

Every run it lists, oldest first, is replayed from its Redis event stream and then followed live,
each as protocol events (`http._thread_events`); then the runs started after, for as long as the
connection lasts. Between runs it blocks on the thread's run signal (one entry per run created,
`Keys.run_signal`): an idle follower sends Redis nothing until a run is created.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from graphwright.server.http._thread_events import Event, ThreadEvents
from graphwright.server.http.launch import Launcher, relay
from graphwright.server.offload import offload
from graphwright.server.schemas.run_bodies import Run
from graphwright_errors import NotFoundError

# The longest blocking read on the run signal: a bound, so a follower whose connection closed
# unnoticed (no cancellation reached it) still ends within it.
IDLE_BLOCK_MS = 10_000


def ended_run(launch: Launcher, thread_id: str, run_id: str) -> tuple[str, bool]:
    """The run's status now, and whether the thread waits at an interrupt."""
    status = launch.store.get(thread_id, run_id).status
    return status, launch.orch.meta(thread_id).get("status") == "interrupted"


def graph_of(launch: Launcher, thread_id: str, run_id: str) -> tuple[Run, str]:
    """The run and the graph it runs (its body names the graph once resolved)."""
    return launch.store.get(thread_id, run_id), launch.store.body(thread_id, run_id).assistant_id


async def run_events(
    launch: Launcher, run: Run, graph: str, state: ThreadEvents
) -> AsyncIterator[Event]:
    """One run's protocol events: its beginning, each stored event, its end."""
    for event in state.begin(run.run_id, graph):
        yield event
    async for item in relay(launch, run, [], None):
        data: Any = json.loads(item["data"])
        for event in state.feed(item["id"], item["event"], data):
            yield event
    try:
        status, waiting = await offload(ended_run, launch, run.thread_id, run.run_id)
    except NotFoundError:  # deleted as it ended: nothing more to say of it
        return
    for event in state.end(status, waiting):
        yield event


async def newest(launch: Launcher, key: str) -> str:
    """The id of the signal's newest entry ("0-0" before the thread's first run)."""
    client = launch.svc.aio()
    got: Any = await launch.ride(lambda: client.xrevrange(key, count=1))
    return got[0][0].decode() if got else "0-0"


async def signalled(launch: Launcher, key: str, after: str) -> str:
    """Block until a run is created after entry `after` (or the bound passes); the newest id."""
    client = launch.svc.aio()
    got: Any = await launch.ride(lambda: client.xread({key: after}, count=1, block=IDLE_BLOCK_MS))
    return got[0][1][-1][0].decode() if got else after


async def follow(launch: Launcher, thread_id: str) -> AsyncIterator[Event]:
    """The thread's protocol events, from its first listed run on, without end.

    The signal's position is taken before the runs are listed, so a run created in between is
    both listed or signalled: never missed.
    """
    state = ThreadEvents()
    seen: set[str] = set()
    key = launch.orch.keys.run_signal(thread_id)
    cursor = await newest(launch, key)
    while True:
        fresh = [r for r in await offload(launch.store.run_ids, thread_id) if r not in seen]
        if not fresh:
            moved = cursor
            while moved == cursor:  # quiet: block again, no other read
                moved = await signalled(launch, key, cursor)
            cursor = moved
            continue
        for run_id in fresh:
            seen.add(run_id)
            try:
                run, graph = await offload(graph_of, launch, thread_id, run_id)
            except NotFoundError:  # deleted (or rolled back) since it was listed
                continue
            async for event in run_events(launch, run, graph, state):
                yield event
