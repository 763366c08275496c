"""Thread-centric streaming (`client.threads.stream`) on graphwright's own terms: a gate
reached through it is answered on the review page and the stream sees the end; a run it
starts is an ordinary run; the caller needs the key; one user cannot read or drive another's
thread through it. (What it answers beside the reference: `test_protocol_diff`.)"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import redis
from langgraph_sdk import get_client, get_sync_client
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from graphwright import Orchestrator
from graphwright.offline import OfflineChatModel
from graphwright.settings import Settings
from graphwright.testing import redis_servers
from graphwright.testing.redis_servers import Server
from graphwright.testing.service import Service, running
from graphwright.testing.until import scaled, until
from tests.support import auth_owner
from tests.support.thread_stream_view import read_until, until_true

KEY = "stream-key-4f1c"
GRAPHS = "tests.support.protocol_graphs:register"
START = {"messages": [], "steps": []}


def settings_for(redis_server: Server) -> Settings:
    return Settings(
        _env_file=None,
        REDIS_URL=redis_server.url,  # type: ignore[call-arg]
        GRAPHWRIGHT_KEY_PREFIX=f"ts{uuid.uuid4().hex[:8]}",
        GRAPHWRIGHT_GRAPHS=GRAPHS,
    )


@pytest.fixture
def served(redis_server: Server) -> Iterator[Service]:
    orch = Orchestrator(settings=settings_for(redis_server), model=OfflineChatModel())
    with running(orch, api_key=KEY, worker=True) as svc:
        yield svc


@pytest.fixture
def isolated(redis_server: Server) -> Iterator[Service]:
    """Users by bearer token, no authorization handler: graphwright's default isolation."""
    orch = Orchestrator(settings=settings_for(redis_server), model=OfflineChatModel())
    with running(orch, auth=auth_owner.only_authentication, worker=True) as svc:
        yield svc


def bearer(user: str) -> dict[str, str]:
    return {"Authorization": f"Bearer token-{user}"}


@pytest.mark.parametrize("transport", ["sse", "websocket"])
def test_a_gate_reached_through_the_stream_is_answered_on_the_review_page(
    served: Service, transport: str
) -> None:
    async def conversation() -> tuple[str, Any, list[dict[str, Any]]]:
        client = get_client(url=served.url, api_key=KEY)
        events: list[dict[str, Any]] = []
        # The SDK's WebSocket handshake sends the stream's headers, not the client's own.
        async with client.threads.stream(
            assistant_id="interrupting",
            transport=transport,  # type: ignore[arg-type]
            headers={"x-api-key": KEY},
        ) as thread:
            await thread.run.start(input=START)
            await until_true(lambda: thread.interrupted, 60)
            async with httpx.AsyncClient(base_url=served.url, headers={"x-api-key": KEY}) as http:
                assert thread.thread_id in (await http.get("/review")).text  # listed as waiting
                answered = await http.post(
                    f"/review/{thread.thread_id}/answer",
                    json={"resume": "yes"},
                    timeout=scaled(30),
                )
                assert answered.json()["status"] == "success"
            output = await thread.output.with_timeout(scaled(60))
            await asyncio.wait_for(read_until(thread.events, "completed", events), scaled(30))
        await client.aclose()
        return thread.thread_id, output, events

    thread_id, output, events = asyncio.run(conversation())
    assert output["steps"] == ["first", "answer:yes", "last"]  # the reviewer's answer
    lifecycle = [e["params"]["data"]["event"] for e in events if e["method"] == "lifecycle"]
    assert lifecycle == ["running", "interrupted", "running", "completed"]
    runs = get_sync_client(url=served.url, api_key=KEY).runs.list(thread_id)
    assert [r["status"] for r in runs] == ["success", "success"]


def test_a_run_started_through_commands_is_an_ordinary_run(served: Service) -> None:
    async def conversation() -> tuple[str, Any]:
        client = get_client(url=served.url, api_key=KEY)
        async with client.threads.stream(assistant_id="subgraph") as thread:
            started = await thread.run.start(input=START, metadata={"topic": "streams"})
            output = await thread.output.with_timeout(scaled(60))
        await client.aclose()
        return started["run_id"], output

    run_id, output = asyncio.run(conversation())
    assert output["steps"] == ["first", "first", "inner_a", "inner_b", "last"]
    client = get_sync_client(url=served.url, api_key=KEY)
    (thread,) = client.threads.search(metadata={"graph_id": "subgraph"})
    assert thread["status"] == "idle"
    (run,) = client.runs.list(thread["thread_id"])
    assert run["run_id"] == run_id and run["status"] == "success"
    assert run["metadata"]["topic"] == "streams"
    assert len(client.threads.get_history(thread["thread_id"])) >= 4  # its checkpoints


FOLLOWER_READS = ("xread", "xrevrange", "zrange")


def blocked_follower(r: redis.Redis) -> dict[str, Any] | None:
    """The client blocked on XREAD (a follower waiting for a run), if any."""
    clients: list[dict[str, Any]] = r.client_list()
    return next((c for c in clients if c["cmd"] == "xread" and "b" in c["flags"]), None)


def idle_followers(r: redis.Redis, seconds: int) -> bool:
    """Whether every client blocked on XREAD has sent nothing for `seconds` (and one is)."""
    blocked = [c for c in r.client_list() if c["cmd"] == "xread" and "b" in c["flags"]]
    return bool(blocked) and all(int(c["idle"]) >= seconds for c in blocked)


def read_calls(r: redis.Redis) -> dict[str, int]:
    stats: dict[str, Any] = r.info("commandstats")
    return {name: stats.get(f"cmdstat_{name}", {}).get("calls", 0) for name in FOLLOWER_READS}


@pytest.fixture
def alone() -> Iterator[tuple[Service, Server]]:
    """A service on a Redis of its own: the only follower it has is the test's (a stream an
    earlier test left may still block a read until its 10 s bound, and count as this one's)."""
    with redis_servers.redis_server() as server:
        orch = Orchestrator(settings=settings_for(server), model=OfflineChatModel())
        with running(orch, api_key=KEY, worker=True) as svc:
            yield svc, server


def test_a_follower_of_an_idle_thread_blocks_and_sees_a_new_run(
    alone: tuple[Service, Server],
) -> None:
    """Between runs a follower sends Redis nothing: it blocks on the thread's run signal and
    wakes when a run is created on the thread."""
    served, redis_server = alone
    r = redis.Redis.from_url(redis_server.url, decode_responses=True)
    sdk = get_sync_client(url=served.url, api_key=KEY)
    thread_id = sdk.threads.create()["thread_id"]

    async def follow(into: list[str]) -> None:
        async with (
            httpx.AsyncClient(base_url=served.url, headers={"x-api-key": KEY}) as http,
            http.stream(
                "POST", f"/threads/{thread_id}/stream/events", json={"channels": ["lifecycle"]}
            ) as answer,
        ):
            async for line in answer.aiter_lines():
                if line.startswith("data:"):
                    into.append(line)
                    if '"completed"' in line:
                        return

    async def session() -> list[str]:
        seen: list[str] = []
        follower = asyncio.create_task(follow(seen))
        try:
            waiting = await asyncio.to_thread(
                until, lambda: blocked_follower(r), "a blocked follower"
            )
            # The stream may block more than one read (each of its waits): all are blocked
            # and were sent a second ago before the count starts.
            await asyncio.to_thread(until, lambda: idle_followers(r, 1), "blocked reads settled")
            before = read_calls(r)
            await asyncio.to_thread(until, lambda: idle_followers(r, 2), "a second more of idling")
            assert read_calls(r) == before, "an idle follower read Redis"
            assert blocked_follower(r)["id"] == waiting["id"]  # type: ignore[index]  # the same wait
            await asyncio.to_thread(sdk.runs.create, thread_id, "subgraph", input=START)
            await asyncio.wait_for(follower, scaled(30))
        finally:
            follower.cancel()
        return seen

    seen = asyncio.run(session())
    assert '"running"' in seen[0] and '"completed"' in seen[-1]
    signal = served.orch.keys.run_signal(thread_id)
    assert r.exists(signal)
    sdk.threads.delete(thread_id)
    assert not r.exists(signal)  # it goes with the thread
    r.close()


def test_the_stream_needs_the_key_like_every_other_route(served: Service) -> None:
    thread = f"{served.url}/threads/{uuid.uuid4()}"
    start = {"id": 1, "method": "run.start", "params": {"assistant_id": "subgraph"}}
    assert httpx.post(f"{thread}/commands", json=start).status_code == 401
    assert httpx.post(f"{thread}/stream/events", json={"channels": ["values"]}).status_code == 401

    async def handshake() -> int:
        try:
            async with connect(thread.replace("http", "ws", 1) + "/stream/events"):
                return 101
        except InvalidStatus as exc:
            return exc.response.status_code

    assert asyncio.run(handshake()) == 403
    sdk = get_sync_client(url=served.url, api_key=KEY)
    assert sdk.threads.search() == []  # the refused command started nothing


def test_another_user_can_neither_follow_nor_drive_the_thread(isolated: Service) -> None:
    async def alices_gate() -> str:
        client = get_client(url=isolated.url, api_key=None, headers=bearer("alice"))
        async with client.threads.stream(assistant_id="interrupting") as thread:
            await thread.run.start(input=START)
            await until_true(lambda: thread.interrupted, 60)
        await client.aclose()
        return thread.thread_id

    thread_id = asyncio.run(alices_gate())
    base = f"{isolated.url}/threads/{thread_id}"
    follow = httpx.post(
        f"{base}/stream/events", json={"channels": ["values"]}, headers=bearer("bob")
    )
    assert follow.status_code == 404
    respond = {"id": 1, "method": "input.respond", "params": {"interrupt_id": "x", "response": 1}}
    start = {"id": 2, "method": "run.start", "params": {"assistant_id": "interrupting"}}
    for command in (respond, start):
        answer = httpx.post(f"{base}/commands", json=command, headers=bearer("bob"))
        assert answer.status_code == 200 and answer.json()["type"] == "error", answer.text

    async def handshake() -> int:
        try:
            url = base.replace("http", "ws", 1) + "/stream/events"
            async with connect(url, additional_headers=bearer("bob")):
                return 101
        except InvalidStatus as exc:
            return exc.response.status_code

    assert asyncio.run(handshake()) == 403
    alice = get_sync_client(url=isolated.url, api_key=None, headers=bearer("alice"))
    assert [r["status"] for r in alice.runs.list(thread_id)] == ["success"]  # bob started none
    assert alice.threads.get(thread_id)["status"] == "interrupted"


EMAIL = 'Email li@example.com with the subject "Weekly report" saying the report is ready.'


def test_the_agents_human_gate_is_answered_with_run_respond(served: Service) -> None:
    """graphwright's own agent, its gate before sending an email: surfaced on the stream as
    an interrupt, approved with `thread.run.respond`, the email sent."""

    async def conversation() -> Any:
        client = get_client(url=served.url, api_key=KEY)
        async with client.threads.stream(assistant_id="agent") as thread:
            await thread.run.start(input={"goal": EMAIL})
            await until_true(lambda: thread.interrupted, 60)
            state = await client.threads.get_state(thread.thread_id)
            (pending,) = state["interrupts"][0]["value"]["calls"]
            assert pending["tool"] == "send_email"
            decision = {pending["id"]: {"action": "approve", "digest": pending["digest"]}}
            await thread.run.respond(decision)
            output = await thread.output.with_timeout(scaled(60))
        await client.aclose()
        return output

    assert "Sent 'Weekly report'" in asyncio.run(conversation())["answer"]
