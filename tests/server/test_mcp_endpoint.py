"""`/mcp` driven by the official MCP SDK's Streamable HTTP client: every assistant a tool
with its graph's input schema, a call an ordinary run (listed, kept), the caller let in and
limited like on every other route, and a gate that surfaces and is answered on review."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from graphwright import Orchestrator
from graphwright.offline import OfflineChatModel
from graphwright.settings import Settings
from graphwright.testing.redis_servers import Server
from graphwright.testing.service import Service, running
from graphwright.testing.until import scaled, until

KEY = "mcp-key-3c1d"
GRAPHS = "tests.support.protocol_graphs:register"


@pytest.fixture(params=[0.0])
def served(redis_server: Server, request: pytest.FixtureRequest) -> Iterator[Service]:
    """The service; a test's `served` parameter is how long a gated call waits for review,
    scaled here: a parameter must read the same in every xdist worker, the load does not."""
    settings = Settings(
        _env_file=None,
        REDIS_URL=redis_server.url,  # type: ignore[call-arg]
        GRAPHWRIGHT_KEY_PREFIX=f"mcp{uuid.uuid4().hex[:8]}",
        GRAPHWRIGHT_GRAPHS=GRAPHS,
        GRAPHWRIGHT_MCP_REVIEW_WAIT_S=scaled(request.param),
    )
    with running(
        Orchestrator(settings=settings, model=OfflineChatModel()), api_key=KEY, worker=False
    ) as svc:
        yield svc


@asynccontextmanager
async def transport(url: str, key: str | None) -> AsyncIterator[Any]:
    headers = {"x-api-key": key} if key else None
    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as streams,
    ):
        yield streams


async def session(url: str, key: str | None = KEY) -> dict[str, Any]:
    """What an MCP client sees: the handshake, the tools, and two calls."""
    async with Client(transport(url, key)) as client:
        tools = await client.list_tools()
        done = await client.call_tool("subgraph", {"steps": ["x"]})
        failed = await client.call_tool("raising", {"steps": []})
        return {
            "version": client.protocol_version,
            "server": client.server_info,
            "tools": {t.name: t for t in tools.tools},
            "done": done,
            "failed": failed,
        }


def test_every_assistant_is_a_tool_and_a_call_is_an_ordinary_run(served: Service) -> None:
    seen = asyncio.run(session(served.url))
    assert seen["version"] == "2025-11-25" and seen["server"].name == "graphwright"
    assert {"interrupting", "chat", "subgraph", "raising", "slow", "agent"} <= set(seen["tools"])
    chat = seen["tools"]["chat"]
    assert chat.description == "Tool based on the chat assistant"
    assert chat.input_schema["type"] == "object"
    assert chat.input_schema["properties"]["messages"] == {  # a model fills in one message
        "type": "string",
        "title": "Messages",
        "description": "The user message to send to the agent.",
    }
    assert "$defs" not in chat.input_schema
    assert seen["done"].is_error is False
    client = get_sync_client(url=served.url, api_key=KEY)
    same = client.runs.wait(None, "subgraph", input={"steps": ["x"]})  # as runs.wait answers
    assert seen["done"].content[0].text == repr(same)  # written as the reference writes it
    assert seen["failed"].is_error is True and seen["failed"].content[0].text
    threads = client.threads.search(metadata={"graph_id": "subgraph"})
    assert len(threads) == 1  # kept, listed: a run like any other
    (run,) = client.runs.list(threads[0]["thread_id"])
    assert run["status"] == "success"


def test_mcp_needs_the_key_like_every_other_route(served: Service) -> None:
    bare = {"Accept": "application/json, text/event-stream"}
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    assert httpx.post(f"{served.url}/mcp", json=message, headers=bare).status_code == 401
    with pytest.raises(ExceptionGroup) as refused:  # the SDK's handshake fails on the 401
        asyncio.run(session(served.url, key=None))
    assert refused.group_contains(MCPError, depth=2)
    keyed = {**bare, "x-api-key": KEY}
    assert httpx.post(f"{served.url}/mcp", content=b"{", headers=keyed).json() == {
        "error": "Invalid JSON"
    }
    unknown = httpx.post(
        f"{served.url}/mcp", headers=keyed, json={"jsonrpc": "2.0", "id": 2, "method": "nope"}
    ).json()
    assert unknown["error"] == {"code": -32601, "message": "Method not found: nope"}
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert httpx.post(f"{served.url}/mcp", json=note, headers=keyed).status_code == 202
    assert httpx.get(f"{served.url}/mcp", headers=keyed).status_code == 405


@contextmanager
def background() -> Iterator[ThreadPoolExecutor]:
    """A thread for the waiting MCP call; a failing test does not wait for it (the server
    stops with the fixture, which ends the call)."""
    pool = ThreadPoolExecutor(1)
    try:
        yield pool
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


async def gated(url: str) -> Any:
    async with Client(transport(url, KEY)) as client:
        return await client.call_tool("interrupting", {"steps": []})


def test_a_gate_in_a_tool_call_surfaces_at_once_without_a_review_wait(served: Service) -> None:
    result = asyncio.run(gated(served.url))
    said = [c.text for c in result.content]
    assert "'__interrupt__'" in said[0] and "go on?" in said[0]
    assert said[1].startswith("The run waits for a reviewer: thread ")
    thread_id = said[1].removeprefix("The run waits for a reviewer: thread ").split(" ")[0]
    with httpx.Client(base_url=served.url, headers={"x-api-key": KEY}) as http:
        assert thread_id in http.get("/review").text  # listed as waiting
        answered = http.post(f"/review/{thread_id}/answer", json={"resume": "yes"}, timeout=30)
        assert answered.json()["status"] == "success"
    state = get_sync_client(url=served.url, api_key=KEY).threads.get_state(thread_id)
    assert state["values"]["steps"] == ["first", "answer:yes", "last"] and state["next"] == []


@pytest.mark.parametrize("served", [60.0], indirect=True)
def test_a_tool_call_stopped_at_a_gate_returns_the_result_once_a_reviewer_answers(
    served: Service,
) -> None:
    client = get_sync_client(url=served.url, api_key=KEY)
    with background() as pool:
        call = pool.submit(asyncio.run, gated(served.url))
        waiting = until(lambda: client.threads.search(status="interrupted"), "the gate")
        thread_id = waiting[0]["thread_id"]
        assert not call.done()  # the caller still waits, for the reviewer
        with httpx.Client(base_url=served.url, headers={"x-api-key": KEY}) as http:
            answered = http.post(
                f"/review/{thread_id}/answer", json={"resume": "yes"}, timeout=scaled(30)
            )
            assert answered.json()["status"] == "success"
        result = call.result(timeout=scaled(30))
    assert [c.text for c in result.content] == [
        "{'messages': [], 'steps': ['first', 'answer:yes', 'last']}"
    ]


EMAIL = 'Email li@example.com with the subject "Weekly report" saying the report is ready.'


async def agent_call(url: str) -> Any:
    async with Client(transport(url, KEY)) as client:
        return await client.call_tool("agent", {"goal": EMAIL})


@pytest.mark.parametrize("served", [60.0], indirect=True)
def test_the_agents_human_gate_is_answered_on_review_and_the_mcp_caller_gets_the_answer(
    served: Service,
) -> None:
    """graphwright's own agent, its gate before sending an email: approved on the review
    page (its form's answer), and the tool call returns the agent's answer."""
    client = get_sync_client(url=served.url, api_key=KEY)
    with background() as pool:
        call = pool.submit(asyncio.run, agent_call(served.url))
        (waiting,) = until(lambda: client.threads.search(status="interrupted"), "the gate")
        gate = client.threads.get_state(waiting["thread_id"])["interrupts"][0]["value"]
        (pending,) = gate["calls"]
        assert pending["tool"] == "send_email"
        decision = {pending["id"]: {"action": "approve", "digest": pending["digest"]}}
        with httpx.Client(base_url=served.url, headers={"x-api-key": KEY}) as http:
            answered = http.post(
                f"/review/{waiting['thread_id']}/answer",
                json={"resume": decision},
                timeout=scaled(30),
            )
            assert answered.json()["status"] == "success"
        result = call.result(timeout=scaled(60))
    assert result.is_error is False and "Sent 'Weekly report'" in result.content[0].text
