"""Following a thread for the thread-centric streaming protocol.

Every run it lists, oldest first, is replayed from its Redis event stream and then followed live,
each as protocol events (`thread_events`); then the runs started after, for as long as the
connection lasts.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from graphwright.server.launch import Launcher, relay
from graphwright.server.offload import offload
from graphwright.server.schemas import Run
from graphwright.server.thread_events import Event, ThreadEvents
from graphwright_errors import NotFoundError

# How often a thread whose runs have all ended is looked at for a new one. Runs have no
# thread-wide event to block on; the look is one ZRANGE, and only idle connections make it.
IDLE_LOOK_S = 0.25


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


async def follow(launch: Launcher, thread_id: str) -> AsyncIterator[Event]:
    """The thread's protocol events, from its first listed run on, without end."""
    state = ThreadEvents()
    seen: set[str] = set()
    while True:
        fresh = [r for r in await offload(launch.store.run_ids, thread_id) if r not in seen]
        if not fresh:
            await asyncio.sleep(IDLE_LOOK_S)
            continue
        for run_id in fresh:
            seen.add(run_id)
            try:
                run, graph = await offload(graph_of, launch, thread_id, run_id)
            except NotFoundError:  # deleted (or rolled back) since it was listed
                continue
            async for event in run_events(launch, run, graph, state):
                yield event
