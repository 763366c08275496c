"""Compaction: long tasks with 3 KB results stay under the input budget on every request, and
the handoff record stays under its cap."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately
from pydantic import BaseModel, ConfigDict

from graphwright.nodes.compact import HANDOFF_PROMPT
from graphwright.nodes.deps import Limits
from graphwright.nodes.handoff import MAX_CHARS, Handoff, folded_calls
from graphwright.nodes.prompt import RULES
from graphwright.testing.scripted_openai import Reply, call
from graphwright.tools.builtin import build_registry
from graphwright.tools.registry import ToolRegistry
from graphwright.tools.spec import ToolContext
from tests.support.agent_rig import AgentRig

# Slow: two hundred agent steps
pytestmark = pytest.mark.slow

BUDGET = 6000
GOAL = "Read log pages 1 to 30 and tell me how many pages you read."
CONSTRAINT = "用中文回答"


class PageArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    page: int


def paged_registry() -> ToolRegistry:
    reg = build_registry()

    @reg.tool(PageArgs, name="read_page")
    def read_page(args: PageArgs, ctx: ToolContext) -> str:
        """Read one page (about 3 KB) of the incident log."""
        ticket = " Ticket INC-4242 opened." if args.page == 3 else ""
        return f"page {args.page}.{ticket} " + "log line ok; " * 240

    return reg


def good_notes(body: dict[str, Any]) -> Reply:
    """The scripted model writes faithful notes: the ticket fact, citing its call."""
    payload = json.loads(body["messages"][-1]["content"])
    facts = [
        {"fact": "page 3 opened ticket INC-4242", "source": m["tool_call_id"]}
        for m in payload["folded_messages"]
        if m["type"] == "tool" and "INC-4242" in m["content"]
    ]
    return Reply(content=json.dumps({"facts": facts, "open_items": ["read the remaining pages"]}))


def plan_prompts(rig: AgentRig) -> list[list[BaseMessage]]:
    return [
        p
        for p in rig.recorder.prompts
        if isinstance(p[0], SystemMessage) and RULES in str(p[0].content)
    ]


def assert_pairs_intact(prompt: list[BaseMessage]) -> None:
    called = [c["id"] for m in prompt if isinstance(m, AIMessage) for c in m.tool_calls]
    answered = [m.tool_call_id for m in prompt if isinstance(m, ToolMessage)]
    assert called == answered
    for i, m in enumerate(prompt):
        if isinstance(m, ToolMessage):
            owner = next(p for p in reversed(prompt[:i]) if isinstance(p, AIMessage))
            assert m.tool_call_id in [c["id"] for c in owner.tool_calls]


def run_pages(rig: AgentRig, pages: int, budget: int = BUDGET) -> tuple[dict[str, Any], Any]:
    if rig.server is not None:
        rig.server.respond(HANDOFF_PROMPT[:40], good_notes)
    rig.script(
        *(Reply(tool_calls=[call("read_page", {"page": n}, f"p{n}")]) for n in range(1, pages + 1)),
        Reply(content=f"已读取第 1 到 {pages} 页，共 {pages} 页。第 3 页开了工单 INC-4242。"),
    )
    limits = Limits(input_budget_tokens=budget, max_model_calls=pages + 10, max_tool_errors=3)
    goal = GOAL.replace("30", str(pages))
    return rig.run(rig.build(tools=paged_registry(), limits=limits), goal, [CONSTRAINT])


def test_thirty_steps_stay_under_the_input_budget(rig: AgentRig) -> None:
    out, config = run_pages(rig, 30)
    assert out["stop_reason"] == "answered"
    assert re.search(r"[\u4e00-\u9fff]", out["answer"]) and "30" in out["answer"]
    pages = [e["args"]["page"] for e in rig.tool_events(config)]
    assert pages == list(range(1, 31))
    prompts = plan_prompts(rig)
    assert len(prompts) == 31
    sizes = [count_tokens_approximately(p) for p in prompts]
    assert max(sizes) < BUDGET, sizes
    # Every page's result reached the model once; together they are what an uncompacted
    # context would have carried, measured from the prompts themselves.
    results = {m.tool_call_id: m for p in prompts for m in p if isinstance(m, ToolMessage)}
    assert len(results) == 30
    assert count_tokens_approximately(list(results.values())) > 2 * BUDGET  # compaction was needed
    for prompt in prompts:
        assert_pairs_intact(prompt)
        assert CONSTRAINT in str(prompt[0].content)  # the first message's constraint survives
    compactions = [e for e in rig.trace(config) if e["kind"] == "compaction"]
    assert len(compactions) >= 2 and all(e["summary_rejected"] == [] for e in compactions)
    assert not any(isinstance(m, HumanMessage) and m.content == GOAL for m in out["messages"])
    record = Handoff.model_validate_json(out["summary"])
    assert "INC-4242" in record.ids
    assert folded_calls(record) >= 20


def test_a_follow_up_turn_after_compaction_makes_its_own_calls(rig: AgentRig) -> None:
    out, config = run_pages(rig, 12)
    assert out["summary"] and out["stop_reason"] == "answered"
    rig.script(
        *(Reply(tool_calls=[call("read_page", {"page": n}, f"again{n}")]) for n in (1, 2)),
        Reply(content="已读取第 1 到 2 页，共 2 页。"),
    )
    graph = rig.build(
        tools=paged_registry(), limits=Limits(input_budget_tokens=BUDGET, max_model_calls=20)
    )
    again, _ = rig.run(
        graph, "Read log pages 1 to 2 and tell me how many pages you read.", config=config
    )
    assert again["stop_reason"] == "answered" and "2" in again["answer"]
    assert [e["args"]["page"] for e in rig.tool_events(config)][-2:] == [
        1,
        2,
    ]  # not skipped as done
    for prompt in plan_prompts(rig):
        assert_pairs_intact(prompt)


def test_two_hundred_steps_keep_every_request_and_the_record_bounded(
    scripted_rig: AgentRig,
) -> None:
    rig = scripted_rig
    out, config = run_pages(rig, 200)
    assert out["stop_reason"] == "answered" and "INC-4242" in out["answer"]
    assert [e["args"]["page"] for e in rig.tool_events(config)] == list(range(1, 201))
    prompts = plan_prompts(rig)
    summaries = [p for p in rig.recorder.prompts if p[0].content == HANDOFF_PROMPT]
    assert len(prompts) == 201 and summaries
    peak = max(count_tokens_approximately(p) for p in prompts + summaries)
    compactions = [e for e in rig.trace(config) if e["kind"] == "compaction"]
    largest = max(e["record_chars"] for e in compactions)
    print(
        f"\n200 steps: peak request {peak} tokens of a {BUDGET} budget; {len(compactions)} "
        f"compactions; largest handoff {largest} chars (cap {MAX_CHARS})"
    )
    assert peak < BUDGET
    assert largest <= MAX_CHARS
    for prompt in prompts:
        assert CONSTRAINT in str(prompt[0].content)
    final = prompts[-1]
    assert "INC-4242" in str(final[0].content)  # the ticket from page 3 is still in the record
    record = Handoff.model_validate_json(out["summary"])
    folded = [f for f in record.earlier if f.tool == "read_page"]
    assert folded and folded[0].calls > 150 and folded[0].covers("page", 1)  # folded into counts


def test_notes_citing_an_unknown_source_are_rejected_and_code_writes_the_record(
    scripted_rig: AgentRig,
) -> None:
    rig = scripted_rig

    def invented(body: dict[str, Any]) -> Reply:
        return Reply(
            content=json.dumps(
                {"facts": [{"fact": "all pages are fine", "source": "p999"}], "open_items": []}
            )
        )

    rig.server.respond(HANDOFF_PROMPT[:40], invented)  # type: ignore[union-attr]
    rig.script(
        *(Reply(tool_calls=[call("read_page", {"page": n}, f"p{n}")]) for n in range(1, 9)),
        Reply(content="读完了 8 页。"),
    )
    limits = Limits(input_budget_tokens=BUDGET, max_model_calls=40)
    out, config = rig.run(
        rig.build(tools=paged_registry(), limits=limits), GOAL.replace("30", "8"), [CONSTRAINT]
    )
    compactions = [e for e in rig.trace(config) if e["kind"] == "compaction"]
    assert compactions and all(e["summary_rejected"] for e in compactions)
    assert any("unknown source 'p999'" in r for r in compactions[0]["summary_rejected"])
    record = Handoff.model_validate_json(out["summary"])
    assert "all pages are fine" not in out["summary"]
    assert {"p1", "p2"} <= {a.call_id for a in record.actions} and "INC-4242" in record.ids
