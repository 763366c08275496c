"""`/a2a/{assistant_id}` driven by the `a2a-sdk` client: the agent card, a message sent
and streamed, a gate surfacing as a task waiting for input and answered (by the A2A caller,
or on the review page, after which `GetTask` has the result), a task cancelled, and the
caller let in like on every other route."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskState,
)
from google.protobuf.json_format import MessageToDict
from google.protobuf.struct_pb2 import Value
from langgraph_sdk import get_sync_client

from graphwright import Orchestrator
from graphwright.offline import OfflineChatModel
from graphwright.settings import Settings
from graphwright.testing.redis_servers import Server
from graphwright.testing.service import Service, running
from graphwright.testing.until import scaled, until

KEY = "a2a-key-9b2e"
GRAPHS = "tests.support.protocol_graphs:register"
NS = uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")


def system(graph: str) -> str:
    """A graph's own assistant id (the reference's UUIDv5 of its name)."""
    return str(uuid.uuid5(NS, graph))


@pytest.fixture
def served(redis_server: Server) -> Iterator[Service]:
    settings = Settings(
        _env_file=None,
        REDIS_URL=redis_server.url,  # type: ignore[call-arg]
        GRAPHWRIGHT_KEY_PREFIX=f"a2a{uuid.uuid4().hex[:8]}",
        GRAPHWRIGHT_GRAPHS=GRAPHS,
    )
    with running(
        Orchestrator(settings=settings, model=OfflineChatModel()), api_key=KEY, worker=True
    ) as svc:
        yield svc


def said(text: str, **ids: str) -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(
            message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=text)], **ids
        )
    )


async def talk(url: str, graph: str, *texts: str, streaming: bool = False) -> list[Any]:
    """Send `texts` to the graph's agent, each continuing the task the first began; the
    last event of each send, then the task as GetTask reads it."""
    async with httpx.AsyncClient(headers={"x-api-key": KEY}, timeout=scaled(30)) as http:
        client = await create_client(
            f"{url}/a2a/{system(graph)}", ClientConfig(streaming=streaming, httpx_client=http)
        )
        seen: list[Any] = []
        ids: dict[str, str] = {}
        for text in texts:
            events = [e async for e in client.send_message(said(text, **ids))]
            seen.append(events[-1])
            task = events[0].task
            ids = ids or {"task_id": task.id, "context_id": task.context_id}
        seen.append(await client.get_task(GetTaskRequest(id=ids["task_id"])))
        return seen


def test_the_agent_card_names_the_assistant_and_its_endpoint(served: Service) -> None:
    card = httpx.get(
        f"{served.url}/a2a/{system('chat')}/.well-known/agent-card.json", headers={"x-api-key": KEY}
    ).json()
    assert card["name"] == "chat" and card["url"] == f"{served.url}/a2a/{system('chat')}"
    assert card["supportedInterfaces"] == [
        {"url": card["url"], "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
    ]
    assert card["skills"][0]["metadata"]["inputSchema"]["supportsA2A"] is True
    again = httpx.get(
        f"{served.url}/.well-known/agent-card.json",
        params={"assistant_id": system("chat")},
        headers={"x-api-key": KEY},
    )
    assert again.json() == card
    assert (
        httpx.get(
            f"{served.url}/.well-known/agent-card.json", params={"assistant_id": system("chat")}
        ).status_code
        == 401
    )


@pytest.mark.parametrize("streaming", [False, True], ids=["send", "stream"])
def test_a_gate_is_a_task_waiting_for_input_that_the_caller_answers(
    served: Service, streaming: bool
) -> None:
    asked, answered, read = asyncio.run(
        talk(served.url, "interrupting", "hi", "yes", streaming=streaming)
    )
    if streaming:  # the last event of a stream: the task's final status
        assert asked.status_update.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        assert answered.status_update.status.state == TaskState.TASK_STATE_COMPLETED
    else:
        assert asked.task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        assert asked.task.artifacts[0].name == "Interrupt"
        gate = MessageToDict(asked.task.artifacts[0].parts[0])["data"]
        assert gate["value"] == {"question": "go on?"}
        assert answered.task.status.state == TaskState.TASK_STATE_COMPLETED
        assert answered.task.id == asked.task.id  # the same task, continued
    assert read.status.state == TaskState.TASK_STATE_COMPLETED
    assert [p.text for m in read.history for p in m.parts] == ["hi"]
    thread = get_sync_client(url=served.url, api_key=KEY).threads.get_state(read.context_id)
    assert thread["values"]["steps"] == ["first", "answer:yes", "last"]  # an ordinary run


def test_a_gate_answered_on_the_review_page_completes_the_task(served: Service) -> None:
    (asked, read) = asyncio.run(talk(served.url, "interrupting", "hi"))
    assert read.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    with httpx.Client(base_url=served.url, headers={"x-api-key": KEY}) as http:
        assert asked.task.context_id in http.get("/review").text
        done = http.post(
            f"/review/{asked.task.context_id}/answer", json={"resume": "ok"}, timeout=scaled(30)
        )
        assert done.json()["status"] == "success"
    (later,) = asyncio.run(read_task(served.url, asked.task.id))
    assert later.status.state == TaskState.TASK_STATE_COMPLETED


async def read_task(url: str, task_id: str) -> list[Any]:
    async with httpx.AsyncClient(headers={"x-api-key": KEY}, timeout=scaled(30)) as http:
        client = await create_client(
            f"{url}/a2a/{system('interrupting')}", ClientConfig(streaming=False, httpx_client=http)
        )
        return [await client.get_task(GetTaskRequest(id=task_id))]


def test_a_running_task_is_cancelled_and_a_finished_one_is_not(served: Service) -> None:
    rpc = {"x-api-key": KEY}
    url = f"{served.url}/a2a/{system('slow')}"
    sdk = get_sync_client(url=served.url, api_key=KEY)
    thread = sdk.threads.create()["thread_id"]
    run = sdk.runs.create(thread, "slow", input={"steps": []})
    until(lambda: sdk.runs.get(thread, run["run_id"])["status"] == "running", "the run starts")
    task = f"{thread}:{run['run_id']}"
    cancel = {"jsonrpc": "2.0", "id": 1, "method": "CancelTask", "params": {"id": task}}
    answer = httpx.post(url, json=cancel, headers=rpc, timeout=scaled(30)).json()
    assert answer["result"]["status"]["state"] == "TASK_STATE_CANCELED"
    again = httpx.post(url, json=cancel, headers=rpc, timeout=scaled(30)).json()
    assert again["error"] == {
        "code": -32002,
        "message": "Task is not cancelable in its current state",
    }
    legacy = {"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"id": task}}
    got = httpx.post(url, json=legacy, headers=rpc, timeout=scaled(30)).json()
    assert got["result"]["status"]["state"] == "canceled"  # the v0.x spelling for v0.x names
    unknown = {"jsonrpc": "2.0", "id": 3, "method": "GetTask", "params": {"id": "nope:nope"}}
    assert httpx.post(url, json=unknown, headers=rpc).json()["error"]["code"] == -32001
    assert httpx.post(url, json=unknown).status_code == 401  # no key: refused like any route


def test_cancel_request_type_is_the_sdks(served: Service) -> None:
    """The SDK's own CancelTask on a finished task: its not-cancelable error, typed."""

    async def attempt() -> str:
        (asked, _) = await talk(served.url, "subgraph", "hi")
        async with httpx.AsyncClient(headers={"x-api-key": KEY}) as http:
            client = await create_client(
                f"{served.url}/a2a/{system('subgraph')}",
                ClientConfig(streaming=False, httpx_client=http),
            )
            try:
                await client.cancel_task(CancelTaskRequest(id=asked.task.id))
            except Exception as exc:  # the SDK raises its own error class
                return type(exc).__name__
            return "no error"

    assert asyncio.run(attempt()) == "TaskNotCancelableError"


def test_ids_from_a_message_cannot_reach_another_route(served: Service) -> None:
    """A context id is one path segment of the inner calls: a slash or a newline in it is
    refused, never followed (found by the fuzz test as a 500)."""
    url, rpc = f"{served.url}/a2a/{system('chat')}", {"x-api-key": KEY}
    for bad in ("x/../../assistants", "a\nb", "../store"):
        message = {
            "messageId": "m1",
            "role": "ROLE_USER",
            "parts": [{"text": "hi"}],
            "contextId": bad,
        }
        body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
        answer = httpx.post(url, json=body, headers=rpc, timeout=scaled(30))
        assert answer.status_code == 200 and answer.json()["error"]["code"] == -32602, bad
        got = {"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": f"{bad}:r"}}
        assert httpx.post(url, json=got, headers=rpc).json()["error"]["code"] == -32001
    card = httpx.get(
        f"{served.url}/.well-known/agent-card.json",
        headers=rpc,
        params={"assistant_id": "../threads"},
    )
    assert card.status_code == 404


EMAIL = 'Email li@example.com with the subject "Weekly report" saying the report is ready.'


def data_part(data: dict[str, Any]) -> Part:
    value = Value()
    value.struct_value.update(data)
    return Part(data=value)


async def delegate(url: str, *parts: Part, **ids: str) -> Any:
    """One message (data parts) to graphwright's agent; its task as the SDK reads it."""
    async with httpx.AsyncClient(headers={"x-api-key": KEY}, timeout=scaled(30)) as http:
        client = await create_client(
            f"{url}/a2a/{system('agent')}", ClientConfig(streaming=False, httpx_client=http)
        )
        message = Message(
            message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=list(parts), **ids
        )
        events = [e async for e in client.send_message(SendMessageRequest(message=message))]
        return events[-1].task


def test_the_agents_human_gate_is_input_required_and_answered_on_review(served: Service) -> None:
    """graphwright's own agent, its gate before sending an email: the A2A task waits for
    input with the pending call; approved on the review page, GetTask reads it completed."""
    task = asyncio.run(delegate(served.url, data_part({"goal": EMAIL})))
    assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    (pending,) = MessageToDict(task.artifacts[0].parts[0])["data"]["value"]["calls"]
    assert pending["tool"] == "send_email"
    decision = {pending["id"]: {"action": "approve", "digest": pending["digest"]}}
    with httpx.Client(base_url=served.url, headers={"x-api-key": KEY}) as http:
        answered = http.post(
            f"/review/{task.context_id}/answer", json={"resume": decision}, timeout=scaled(30)
        )
        assert answered.json()["status"] == "success"
    (read,) = asyncio.run(read_task_of("agent", served.url, task.id))
    assert read.status.state == TaskState.TASK_STATE_COMPLETED
    state = get_sync_client(url=served.url, api_key=KEY).threads.get_state(task.context_id)
    assert "Sent 'Weekly report'" in state["values"]["answer"]


def test_the_a2a_caller_answers_the_agents_gate_with_a_resume_data_part(served: Service) -> None:
    task = asyncio.run(delegate(served.url, data_part({"goal": EMAIL})))
    (pending,) = MessageToDict(task.artifacts[0].parts[0])["data"]["value"]["calls"]
    decision = {pending["id"]: {"action": "approve", "digest": pending["digest"]}}
    done = asyncio.run(
        delegate(
            served.url, data_part({"resume": decision}), task_id=task.id, context_id=task.context_id
        )
    )
    assert done.status.state == TaskState.TASK_STATE_COMPLETED and done.id == task.id
    said = MessageToDict(done.artifacts[0].parts[0])
    assert "Sent 'Weekly report'" in str(said)


async def read_task_of(graph: str, url: str, task_id: str) -> list[Any]:
    async with httpx.AsyncClient(headers={"x-api-key": KEY}, timeout=scaled(30)) as http:
        client = await create_client(
            f"{url}/a2a/{system(graph)}", ClientConfig(streaming=False, httpx_client=http)
        )
        return [await client.get_task(GetTaskRequest(id=task_id))]
