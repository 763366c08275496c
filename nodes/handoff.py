"""The compaction handoff record, where to cut the context, and the check a summary must pass."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately
from pydantic import BaseModel, Field

from nodes.jsonreply import parse_json_reply

# Ids worth keeping: order numbers, tracking numbers, ticket keys and the like.
ID_PATTERN = re.compile(r"\b[A-Z]{1,4}-?\d{3,}\b")
RESULT_CHARS = 100


class Fact(BaseModel):
    fact: str = Field(description="a confirmed fact, in one sentence")
    source: str = Field(description="tool call id or message id it came from")


class ActionDone(BaseModel):
    call_id: str
    tool: str
    args: dict[str, Any] | str = Field(default_factory=dict)
    result: str = Field(description=f"the result, at most {RESULT_CHARS} characters")


class Handoff(BaseModel):
    """What the next plan step needs from the folded turns."""

    facts: list[Fact] = Field(default_factory=list)
    actions: list[ActionDone] = Field(default_factory=list)
    open_items: list[str] = Field(default_factory=list)
    refs: list[str] = Field(default_factory=list, description="ids of the folded messages")


def cut_index(messages: Sequence[AnyMessage], keep_tokens: int) -> int:
    """Index where the kept tail starts: as many recent turns as fit in ``keep_tokens``.

    The tail starts at an AI or human message, never at a tool message, so a call is
    never separated from its result. Returns 0 when nothing can be folded.
    """
    best = len(messages)
    for i in range(len(messages) - 1, 0, -1):
        if isinstance(messages[i], ToolMessage):
            continue
        if count_tokens_approximately(messages[i:]) > keep_tokens:
            break
        best = i
    if best == len(messages):
        # Not even the last turn fits: fold all but the last turn (never split it).
        starts = [i for i, m in enumerate(messages) if i > 0 and not isinstance(m, ToolMessage)]
        best = starts[-1] if starts else 0
    return best


def folded_actions(folded: Sequence[AnyMessage]) -> list[ActionDone]:
    """The calls and results in the folded turns, as the program recorded them."""
    results = {m.tool_call_id: str(m.content) for m in folded if isinstance(m, ToolMessage)}
    actions = []
    for message in folded:
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                call_id = call["id"] or ""
                if call_id in results:
                    actions.append(ActionDone(call_id=call_id, tool=call["name"],
                                              args=call["args"],
                                              result=results[call_id][:RESULT_CHARS]))
    return actions


def required(folded: Sequence[AnyMessage], previous: Handoff | None) -> tuple[set[str], set[str]]:
    """(call ids, entity ids) a new handoff must keep: the folded actions and earlier record."""
    call_ids = {a.call_id for a in folded_actions(folded)}
    text = " ".join(str(m.content) for m in folded if not isinstance(m, HumanMessage))
    entity_ids = set(ID_PATTERN.findall(text))
    if previous:
        call_ids |= {a.call_id for a in previous.actions}
        entity_ids |= set(ID_PATTERN.findall(previous.model_dump_json()))
    return call_ids, entity_ids


def problems(handoff: Handoff, call_ids: set[str], entity_ids: set[str]) -> list[str]:
    """What a summary dropped; an empty list means it passes."""
    kept_calls = {a.call_id for a in handoff.actions}
    text = handoff.model_dump_json()
    out = [f"action {c} is missing" for c in sorted(call_ids - kept_calls)]
    out += [f"id {e} is missing" for e in sorted(entity_ids) if e not in text]
    return out


def fallback(folded: Sequence[AnyMessage], previous: Handoff | None) -> Handoff:
    """A record built by code when the model's summary fails the check."""
    actions = (previous.actions if previous else []) + folded_actions(folded)
    facts = list(previous.facts if previous else [])
    for message in folded:
        if isinstance(message, ToolMessage):
            ids = sorted(set(ID_PATTERN.findall(str(message.content))))
            if ids:
                facts.append(Fact(fact=f"ids seen: {', '.join(ids)}", source=message.tool_call_id))
    return Handoff(
        facts=facts,
        actions=actions,
        open_items=previous.open_items if previous else [],
        refs=(previous.refs if previous else []) + [m.id for m in folded if m.id],
    )


def parse(text: str) -> Handoff:
    """The model's JSON summary (code fences tolerated); raises ValueError when it is not one."""
    return Handoff.model_validate(parse_json_reply(text))
