"""A user's own graph tested with `graphwright.testing` alone, the way a user would.

Nothing here comes from graphwright's own test helpers (`tests/`): the fixtures are the
kit's pytest plugin (loaded by `tests/conftest.py` the way a user's conftest loads it),
the graph is defined in this file.
"""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

from graphwright import GraphContext, GraphRegistry, Orchestrator, RunInput
from graphwright.testing import Reply, ScriptedOpenAI, bound_orchestrator, redis_server

SYSTEM = "You are a polite greeter. Answer in one sentence."


class Greeting(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    answer: str


def build_greeter(ctx: GraphContext) -> Any:
    """One model turn: the system prompt, the user's goal, the model's reply as the answer."""

    def greet(state: Greeting) -> dict[str, Any]:
        reply = ctx.model.invoke([SystemMessage(SYSTEM), *state["messages"]])
        return {"messages": [reply], "answer": str(reply.content)}

    g = StateGraph(Greeting)
    g.add_node("greet", greet)
    g.add_edge(START, "greet")
    g.add_edge("greet", END)
    return g.compile(checkpointer=ctx.checkpointer, name="greeter")


def build_broken(ctx: GraphContext) -> Any:
    """Sends the model a tool call nobody answered: the real API refuses that with 400."""

    def ask(state: Greeting) -> dict[str, Any]:
        dangling = AIMessage("", tool_calls=[{"name": "lookup", "args": {}, "id": "call_1"}])
        reply = ctx.model.invoke([*state["messages"], dangling, HumanMessage("and?")])
        return {"answer": str(reply.content)}

    g = StateGraph(Greeting)
    g.add_node("ask", ask)
    g.add_edge(START, "ask")
    g.add_edge("ask", END)
    return g.compile(checkpointer=ctx.checkpointer, name="broken")


def greeting_input(run: RunInput) -> dict[str, Any]:
    return {"messages": [HumanMessage(run.goal)]}


def my_graphs() -> GraphRegistry:
    graphs = GraphRegistry()
    graphs.register("greeter", build_greeter, make_input=greeting_input)
    graphs.register("broken", build_broken, make_input=greeting_input)
    return graphs


@pytest.fixture
def graphwright_graphs() -> GraphRegistry:
    """The kit's hook: `graphwright_orchestrator` serves these graphs."""
    return my_graphs()


def test_a_custom_graph_runs_against_the_scripted_model_and_persists_in_redis(
    graphwright_orchestrator: Orchestrator, scripted_openai: ScriptedOpenAI
) -> None:
    scripted_openai.load(Reply(content="Hello, Ada!", prompt_tokens=12, completion_tokens=4))
    result = graphwright_orchestrator.invoke("greeter", "Greet Ada")
    assert result.status == "completed" and result.answer == "Hello, Ada!"
    sent = scripted_openai.requests[0]["messages"]
    assert [m["role"] for m in sent] == ["system", "user"] and sent[1]["content"] == "Greet Ada"
    state = graphwright_orchestrator.state(result.thread_id)  # read back from Redis
    assert state.values["answer"] == "Hello, Ada!" and state.status == "completed"
    assert [m["type"] for m in state.values["messages"]] == ["human", "ai"]  # as JSON


def test_the_scripted_model_refuses_an_invalid_message_sequence_with_400(
    graphwright_orchestrator: Orchestrator, scripted_openai: ScriptedOpenAI
) -> None:
    result = graphwright_orchestrator.invoke("broken", "Look it up")
    assert result.status == "failed" and "400" in (result.error or "")
    [(why, _)] = scripted_openai.rejected
    assert "tool_call_ids did not have response messages: call_1" in why
    scripted_openai.rejected.clear()  # seen: the fixture's end-of-test check would fail on it


def test_the_kit_works_without_pytest_fixtures() -> None:
    """A second run on the thread sends the first run's messages, read back from Redis."""
    with redis_server() as redis, ScriptedOpenAI() as model:
        model.load(Reply(content="Hello!"), Reply(content="Still here."))
        with bound_orchestrator(redis.url, model, graphs=my_graphs()) as orch:
            first = orch.invoke("greeter", "Greet Ada")
            second = orch.invoke("greeter", "Are you there?", thread_id=first.thread_id)
        assert second.answer == "Still here."
        assert [m["role"] for m in model.requests[1]["messages"]] == [
            "system",
            "user",
            "assistant",
            "user",
        ]
        model.assert_done()
