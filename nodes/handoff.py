"""The compaction handoff record: what it holds, its size cap, where to cut the context.

Code owns what the program knows for certain (every call and its result, the ids
seen); the model adds facts in words and open items, checked before they are used.
The record has a size cap: older actions fold into per-tool counts, older references
into a count, so a long run's record stays bounded.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, ToolMessage
from pydantic import BaseModel, Field

from graphwright.nodes.tokens import Counter, approximate

# Ids worth keeping: order numbers, tracking numbers, ticket keys and the like.
ID_PATTERN = re.compile(r"\b[A-Z]{1,4}-?\d{3,}\b")
RESULT_CHARS = 100
MAX_CHARS = 3000  # the record's cap, as JSON
MAX_IDS = 60
MAX_REFS = 12
MIN_ACTIONS = 3
MAX_VALUES = 5
MAX_FOLDED = 12


# No docstring: pydantic would send it to the model as the schema's description.
class Fact(BaseModel):  # noqa: D101
    fact: str = Field(max_length=300, description="a confirmed fact, in one sentence")
    source: str = Field(description="tool call id or message id it came from")


class Notes(BaseModel):
    """What the model writes for a handoff: facts with their sources, and open items."""

    facts: list[Fact] = Field(default_factory=list, max_length=20)
    open_items: list[str] = Field(default_factory=list, max_length=10)


class ActionDone(BaseModel):
    """A call code folded into the record: its id, tool, arguments and clipped result."""

    call_id: str
    tool: str
    args: dict[str, Any] | str = Field(default_factory=dict)
    result: str = Field(description=f"the result, at most {RESULT_CHARS} characters")
    turn: str = Field(default="", description="id of the user message that started its turn")


class Folded(BaseModel):
    """Older calls of one tool in one turn, as counts and argument ranges instead of entries."""

    tool: str
    turn: str = ""
    calls: int = 0
    ranges: dict[str, list[tuple[int, int]]] = Field(
        default_factory=dict, description="integer args"
    )
    values: dict[str, list[str]] = Field(default_factory=dict, description="newest other args")

    def add(self, args: dict[str, Any] | str) -> None:
        self.calls += 1
        for key, value in args.items() if isinstance(args, dict) else []:
            if isinstance(value, int) and not isinstance(value, bool):
                self.ranges[key] = _with(self.ranges.get(key, []), value)
            else:
                seen = [v for v in self.values.get(key, []) if v != str(value)[:80]]
                self.values[key] = [*seen, str(value)[:80]][-MAX_VALUES:]

    def covers(self, key: str, value: int) -> bool:
        return any(lo <= value <= hi for lo, hi in self.ranges.get(key, []))


def _with(ranges: list[tuple[int, int]], value: int) -> list[tuple[int, int]]:
    """Sorted, merged integer ranges with `value` added."""
    out: list[tuple[int, int]] = []
    for lo, hi in sorted([*ranges, (value, value)]):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


class Handoff(BaseModel):
    """What the next plan step needs from the folded turns, within `MAX_CHARS`."""

    facts: list[Fact] = Field(default_factory=list)
    actions: list[ActionDone] = Field(default_factory=list, description="the newest calls, in full")
    earlier: list[Folded] = Field(
        default_factory=list, description="older calls, folded per tool and turn"
    )
    ids: list[str] = Field(default_factory=list, description="ids seen (orders, tickets, ...)")
    open_items: list[str] = Field(default_factory=list)
    refs: list[str] = Field(default_factory=list, description="ids of the newest folded messages")
    refs_folded: int = Field(default=0, description="older folded messages, counted")


def cut_index(
    messages: Sequence[BaseMessage], keep_tokens: int, count: Counter = approximate
) -> int:
    """Index where the kept tail starts: as many recent turns as fit in `keep_tokens`.

    Linear: each message is counted once. The tail starts at an AI or human message,
    never at a tool message, so a call is never separated from its result. Returns 0
    when nothing can be folded.
    """
    best, tail = len(messages), 0
    for i in range(len(messages) - 1, 0, -1):
        tail += count([messages[i]])
        if isinstance(messages[i], ToolMessage):
            continue
        if tail > keep_tokens:
            break
        best = i
    if best == len(messages):
        # Not even the last turn fits: fold all but the last turn (never split it).
        starts = [i for i, m in enumerate(messages) if i > 0 and not isinstance(m, ToolMessage)]
        best = starts[-1] if starts else 0
    return best


def folded_actions(folded: Sequence[AnyMessage], turn: str = "") -> list[ActionDone]:
    """The calls and results in the folded turns, as the program recorded them, with their turn."""
    results = {m.tool_call_id: str(m.content) for m in folded if isinstance(m, ToolMessage)}
    actions = []
    for message in folded:
        if isinstance(message, HumanMessage) and message.id:
            turn = message.id
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                call_id = call["id"] or ""
                if call_id in results:
                    actions.append(
                        ActionDone(
                            call_id=call_id,
                            tool=call["name"],
                            args=call["args"],
                            result=results[call_id][:RESULT_CHARS],
                            turn=turn,
                        )
                    )
    return actions


def sources(folded: Sequence[AnyMessage], previous: Handoff | None) -> set[str]:
    """Ids a fact may cite: the folded messages, their calls, and the earlier record's."""
    known = {m.id for m in folded if m.id} | {a.call_id for a in folded_actions(folded)}
    if previous:
        known |= {a.call_id for a in previous.actions} | set(previous.refs)
        known |= {f.source for f in previous.facts}
    return known


def problems(notes: Notes, known: set[str]) -> list[str]:
    """What is wrong with the model's notes; an empty list means they pass."""
    return [f"fact cites unknown source {f.source!r}" for f in notes.facts if f.source not in known]


def merged(folded: Sequence[AnyMessage], previous: Handoff | None, notes: Notes | None) -> Handoff:
    """The new record: code's actions and ids, the model's notes (or code's on failure), capped."""
    last_turn = previous.actions[-1].turn if previous and previous.actions else ""
    actions = (previous.actions if previous else []) + folded_actions(folded, last_turn)
    text = " ".join(str(m.content) for m in folded)
    ids = list(dict.fromkeys([*(previous.ids if previous else []), *ID_PATTERN.findall(text)]))
    facts = list(previous.facts if previous else [])
    if notes is not None:
        facts += notes.facts
    else:
        for message in folded:
            if isinstance(message, ToolMessage):
                found = sorted(set(ID_PATTERN.findall(str(message.content))))
                if found:
                    facts.append(
                        Fact(fact=f"ids seen: {', '.join(found)}", source=message.tool_call_id)
                    )
    record = Handoff(
        facts=facts,
        actions=actions,
        earlier=list(previous.earlier) if previous else [],
        ids=ids,
        open_items=notes.open_items
        if notes is not None
        else (previous.open_items if previous else []),
        refs=(previous.refs if previous else []) + [m.id for m in folded if m.id],
        refs_folded=previous.refs_folded if previous else 0,
    )
    return bounded(record)


def bounded(record: Handoff, cap: int = MAX_CHARS) -> Handoff:
    """`record` within `cap` characters: fold the oldest actions into counts, trim the rest."""
    r = record.model_copy(deep=True)
    r.ids = r.ids[-MAX_IDS:]
    r.open_items = [item[:200] for item in r.open_items[:5]]
    if len(r.refs) > MAX_REFS:
        r.refs_folded += len(r.refs) - MAX_REFS
        r.refs = r.refs[-MAX_REFS:]
    size = len(r.model_dump_json())
    while size > cap and len(r.actions) > MIN_ACTIONS:
        fold(r, r.actions.pop(0))
        size = len(r.model_dump_json())
    while size > cap and r.facts:
        r.facts.pop(0)  # the ids a dropped fact named are still in `ids`
        size = len(r.model_dump_json())
    return r


def fold(record: Handoff, action: ActionDone) -> None:
    """Count `action` into its tool's and turn's folded entry; the oldest beyond the cap go."""
    entry = next(
        (f for f in record.earlier if f.tool == action.tool and f.turn == action.turn), None
    )
    if entry is None:
        entry = Folded(tool=action.tool, turn=action.turn)
        record.earlier.append(entry)
        del record.earlier[:-MAX_FOLDED]
    entry.add(action.args)


def folded_calls(record: Handoff) -> int:
    """How many calls the record holds, in full or folded."""
    return len(record.actions) + sum(f.calls for f in record.earlier)
