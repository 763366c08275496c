"""What `bench.templates` asks of each LangGraph template, and how its model answers.

A template is known by its `pyproject.toml` name. Each call sets only what a user sets
(the input, and the model as `openai/scripted` in the template's own context or
configurable field); the model's answer is a pure function of the request, so both
servers get the same answers whatever order they ask in. `limits` say what the calls
leave out because it needs a service this machine cannot reach.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from graphwright.testing.scripted_openai import Reply, call

MODEL = "openai/scripted"
Answer = Callable[[dict[str, Any]], Reply]


@dataclass(frozen=True, kw_only=True)
class Call:
    """One run through the SDK: `runs.wait` on a new thread (or the previous call's)."""

    graph: str
    input: dict[str, Any]
    context: dict[str, Any] | None = None
    config: dict[str, Any] | None = None
    label: str = ""  # shown beside the graph when a graph has several calls
    store: tuple[str, ...] | None = None  # count the store's items under this prefix after
    follow_up: bool = False  # on the previous call's thread, as a conversation's next turn


@dataclass(frozen=True, kw_only=True)
class Scenario:
    calls: list[Call]
    answer: Answer
    limits: list[str] = field(default_factory=list)


def scenario(name: str, page_url: str) -> Scenario | None:
    """The scenario of the template whose project is `name`.

    `page_url` is a local web page a scraping tool may read. None for a template this tool does not
    know.
    """
    made = {
        "agent": _starter,
        "react-agent": _react,
        "memory-agent": _memory,
        "enrichment-agent": _enrichment,
        "retrieval-graph": _retrieval,
    }.get(name)
    return made(page_url) if made else None


def _starter(_: str) -> Scenario:
    return Scenario(
        calls=[
            Call(
                graph="agent",
                input={"changeme": "hello"},
                context={"my_configurable_param": "tuned"},
            )
        ],
        answer=lambda body: Reply(content="unused"),
    )


def _react(_: str) -> Scenario:
    def answer(body: dict[str, Any]) -> Reply:
        asked = str(body["messages"][-1].get("content"))
        return Reply(content="3 + 3 = 6." if "3 + 3" in asked else "2 + 2 = 4.")

    def question(text: str) -> dict[str, Any]:
        return {"messages": [{"role": "user", "content": text}]}

    return Scenario(
        calls=[
            Call(graph="agent", input=question("What is 2 + 2?"), context={"model": MODEL}),
            Call(
                graph="agent",
                label="next turn",
                input=question("And 3 + 3?"),
                context={"model": MODEL},
                follow_up=True,
            ),
        ],
        answer=answer,
        limits=[
            "react-agent: its one tool (`search`) calls Tavily's web API (TAVILY_API_KEY, "
            "internet); the model answers without calling it"
        ],
    )


def _memory(_: str) -> Scenario:
    def answer(body: dict[str, Any]) -> Reply:
        messages = body["messages"]
        if messages[-1]["role"] == "tool":
            return Reply(content="Noted: you like green tea.")
        if "?" not in str(messages[-1].get("content")):
            return Reply(
                tool_calls=[
                    call(
                        "upsert_memory",
                        {
                            "content": "Li likes green tea",
                            "context": "said when introducing himself",
                        },
                        id="call_memory_1",
                    )
                ]
            )
        recalled = "green tea" in str(messages[0].get("content"))
        return Reply(content="You like green tea." if recalled else "I do not know yet.")

    context = {"model": MODEL, "user_id": "li"}
    return Scenario(
        calls=[
            Call(
                graph="agent",
                label="remember",
                context=context,
                store=("memories", "li"),
                input={"messages": [{"role": "user", "content": "Hi, I am Li. I like green tea."}]},
            ),
            Call(
                graph="agent",
                label="recall",
                context=context,
                store=("memories", "li"),
                input={"messages": [{"role": "user", "content": "What do I like to drink?"}]},
            ),
        ],
        answer=answer,
    )


SCHEMA = {
    "type": "object",
    "required": ["name", "habit"],
    "properties": {"name": {"type": "string"}, "habit": {"type": "string"}},
}
VERDICT = {
    "reason": ["names the bird", "cites the page", "fills every field"],
    "is_satisfactory": True,
    "improvement_instructions": None,
}


def _enrichment(page_url: str) -> Scenario:
    def answer(body: dict[str, Any]) -> Reply:
        tools = [t["function"]["name"] for t in body.get("tools") or []]
        if (body.get("response_format") or {}).get("type") == "json_schema":
            return Reply(content=json.dumps(VERDICT))  # reflect's structured output
        if "InfoIsSatisfactory" in tools:
            return Reply(tool_calls=[call("InfoIsSatisfactory", VERDICT, id="call_verdict")])
        if "Info" not in tools:  # scrape_website's note-taking prompt
            return Reply(content="Notes: the barn owl hunts at night by sound.")
        if not any(m["role"] == "tool" for m in body["messages"]):
            return Reply(tool_calls=[call("scrape_website", {"url": page_url}, id="call_scrape")])
        return Reply(
            tool_calls=[
                call(
                    "Info", {"name": "barn owl", "habit": "hunts at night by sound"}, id="call_info"
                )
            ]
        )

    return Scenario(
        calls=[
            Call(
                graph="agent",
                input={"topic": "the barn owl", "extraction_schema": SCHEMA},
                config={"configurable": {"model": MODEL}},
            )
        ],
        answer=answer,
        limits=[
            "data-enrichment: its `search` tool calls Tavily's web API (TAVILY_API_KEY, "
            "internet) and is not called; `scrape_website` reads a page served on "
            "loopback"
        ],
    )


def _retrieval(_: str) -> Scenario:
    user = {"user_id": "li", "embedding_model": "openai/text-embedding-3-small"}
    return Scenario(
        calls=[
            Call(
                graph="indexer",
                input={"docs": [{"page_content": "Barn owls hunt by sound."}]},
                config={"configurable": user},
            ),
            Call(
                graph="retrieval_graph",
                input={"messages": [{"role": "user", "content": "How do barn owls hunt?"}]},
                config={"configurable": {**user, "response_model": MODEL, "query_model": MODEL}},
            ),
        ],
        answer=lambda body: Reply(content="By sound."),
        limits=[
            "retrieval-agent-template: both graphs open a vector store (`retriever_provider`: "
            "Elasticsearch, Pinecone or MongoDB Atlas, each a network service with its "
            "credentials); none is reachable here, so no run can complete on either server"
        ],
    )
