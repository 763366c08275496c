"""Compaction: a 30-step task with 3 KB results stays under the input budget on every request."""

from __future__ import annotations

import json
import re
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately
from pydantic import BaseModel, ConfigDict

from nodes.compact import HANDOFF_PROMPT
from nodes.deps import Limits
from nodes.prompt import RULES
from tests.agent_rig import AgentRig
from tests.openai_server import Reply, call
from tools.builtin import build_registry
from tools.registry import ToolRegistry
from tools.spec import ToolContext

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


def good_summary(body: dict[str, Any]) -> Reply:
    """The scripted model writes a faithful handoff record from what it was sent."""
    payload = json.loads(body["messages"][-1]["content"])
    previous = payload["previous_record"] or {"facts": [], "actions": [], "open_items": [], "refs": []}
    folded = payload["folded_messages"]
    results = {m["tool_call_id"]: m["content"] for m in folded if m["type"] == "tool"}
    actions = list(previous["actions"])
    facts = list(previous["facts"])
    for m in folded:
        for c in m.get("tool_calls") or []:
            actions.append({"call_id": c["id"], "tool": c["name"], "args": c["args"],
                            "result": results.get(c["id"], "")[:80]})
            if "INC-4242" in results.get(c["id"], ""):
                facts.append({"fact": "page 3 opened ticket INC-4242", "source": c["id"]})
    record = {"facts": facts, "actions": actions, "open_items": ["read the remaining pages"],
              "refs": [m["id"] for m in folded]}
    return Reply(content=json.dumps(record))


def plan_prompts(rig: AgentRig) -> list[list[BaseMessage]]:
    return [p for p in rig.recorder.prompts if isinstance(p[0], SystemMessage) and RULES in str(p[0].content)]


def assert_pairs_intact(prompt: list[BaseMessage]) -> None:
    called = [c["id"] for m in prompt if isinstance(m, AIMessage) for c in m.tool_calls]
    answered = [m.tool_call_id for m in prompt if isinstance(m, ToolMessage)]
    assert called == answered
    for i, m in enumerate(prompt):
        if isinstance(m, ToolMessage):
            owner = next(p for p in reversed(prompt[:i]) if isinstance(p, AIMessage))
            assert m.tool_call_id in [c["id"] for c in owner.tool_calls]


def test_thirty_steps_stay_under_the_input_budget(rig: AgentRig) -> None:
    if rig.server is not None:
        rig.server.respond(HANDOFF_PROMPT[:40], good_summary)
    rig.script(*(Reply(tool_calls=[call("read_page", {"page": n}, f"p{n}")]) for n in range(1, 31)),
               Reply(content="已读取第 1 到 30 页，共 30 页。第 3 页开了工单 INC-4242。"))
    limits = Limits(input_budget_tokens=BUDGET, max_model_calls=40)
    out, config = rig.run(rig.build(tools=paged_registry(), limits=limits), GOAL, [CONSTRAINT])

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
    record = json.loads(out["summary"])
    assert "INC-4242" in out["summary"]
    assert len(record["actions"]) >= 20


def test_a_summary_that_drops_an_action_is_rejected_and_code_writes_the_record(
    scripted_rig: AgentRig,
) -> None:
    rig = scripted_rig

    def lossy(body: dict[str, Any]) -> Reply:
        return Reply(content=json.dumps({"facts": [], "actions": [], "open_items": [], "refs": []}))

    rig.server.respond(HANDOFF_PROMPT[:40], lossy)  # type: ignore[union-attr]
    rig.script(*(Reply(tool_calls=[call("read_page", {"page": n}, f"p{n}")]) for n in range(1, 9)),
               Reply(content="读完了 8 页。"))
    limits = Limits(input_budget_tokens=BUDGET, max_model_calls=40)
    out, config = rig.run(rig.build(tools=paged_registry(), limits=limits), GOAL.replace("30", "8"), [CONSTRAINT])
    compactions = [e for e in rig.trace(config) if e["kind"] == "compaction"]
    assert compactions and all(e["summary_rejected"] for e in compactions)
    assert any("action p1 is missing" in r for r in compactions[0]["summary_rejected"])
    record = json.loads(out["summary"])
    kept = {a["call_id"] for a in record["actions"]}
    assert {"p1", "p2"} <= kept and "INC-4242" in out["summary"]
