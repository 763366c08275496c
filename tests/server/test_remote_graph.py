"""LangGraph's `RemoteGraph` and the SDK against graphwright serve: invoke, token streams
(the fixed model's 20 chunks arrive as 20 `messages` events), interrupt and resume, and a
remote graph used as a node whose interrupt reaches the parent's caller."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.pregel.remote import RemoteGraph
from langgraph.types import Command
from langgraph_sdk import get_sync_client

from graphwright.testing.fixed_openai import CHUNKS, REPLY, WORDS, serving
from graphwright.testing.redis_servers import Server
from tests.support.protocol_graphs import CHAT_URL_ENV, State
from tests.support.protocol_servers import graphwright_server

# Slow: the reference's RemoteGraph against a served graph
pytestmark = pytest.mark.slow

HI = {"messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture(scope="module")
def url(redis_server: Server) -> Iterator[str]:
    with serving() as chat:
        os.environ[CHAT_URL_ENV] = chat
        with graphwright_server(redis_server.url) as svc:
            yield svc.url


def thread() -> dict[str, dict[str, str]]:
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


def test_the_sdk_gets_each_streamed_chunk_as_one_messages_event(url: str) -> None:
    sdk = get_sync_client(url=url, api_key=None)
    tid = sdk.threads.create()["thread_id"]
    parts = list(sdk.runs.stream(tid, "chat", input=HI, stream_mode="messages-tuple"))
    tokens = [p.data[0]["content"] for p in parts if p.event == "messages" and p.data[0]["content"]]
    assert tokens == WORDS and len(tokens) == CHUNKS
    assert all(p.data[1]["langgraph_node"] == "reply" for p in parts if p.event == "messages")


def test_remote_graph_invokes_and_streams_messages_on_a_new_thread(url: str) -> None:
    remote = RemoteGraph("chat", url=url)
    out = remote.invoke(HI, config=thread())
    assert out["messages"][-1]["content"] == REPLY
    chunks = list(remote.stream(HI, config=thread(), stream_mode="messages"))
    texts = [c[0]["content"] for c in chunks if c[0]["content"]]  # (message dict, metadata) pairs
    assert texts == WORDS


def test_remote_graph_interrupt_and_resume(url: str) -> None:
    remote = RemoteGraph("interrupting", url=url)
    config = thread()
    first = remote.invoke({"steps": []}, config=config)
    assert first["__interrupt__"][0]["value"] == {"question": "go on?"}
    done = remote.invoke(Command(resume="yes"), config=config)
    assert done["steps"] == ["first", "answer:yes", "last"]


def test_a_remote_graph_node_interrupt_reaches_the_parent_caller(url: str) -> None:
    parent = StateGraph(State)
    parent.add_node("remote", RemoteGraph("interrupting", url=url))
    parent.add_edge(START, "remote")
    graph = parent.compile(checkpointer=InMemorySaver())
    out = graph.invoke({"steps": []}, config=thread())
    (interrupt,) = out["__interrupt__"]
    assert interrupt.value == {"question": "go on?"}
