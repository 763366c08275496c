"""Typed state of the agent graph (plan, act, observe, compact, human gate)."""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal, NotRequired

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict  # pydantic builds JSON schemas from it on 3.11

from graphwright.nodes.canonical import canonical

StopReason = Literal[
    "answered", "max_steps", "tool_errors", "repeated_call", "deadline", "token_budget", "rejected"
]
Action = Literal["run", "needs_approval", "refuse", "outcome_unknown"]
Outcome = Literal["ok", "error", "repeat", "rejected"]


def keep_constraints(left: list[str] | None, right: list[str]) -> list[str]:
    """Reducer: a follow-up turn adds its constraints; earlier ones still hold."""
    out = list(left or [])
    return out + [c for c in right if c not in out]


class ProposedCall(TypedDict):
    """A tool call the model proposed, with the policy's verdict on it."""

    id: str  # the model's tool_call_id
    name: str  # tool name
    args: dict[str, Any] | str  # arguments as proposed; a string is JSON the model broke
    action: Action  # what the policy decided
    reason: str  # why, in words shown at the gate
    idempotency_key: NotRequired[str]  # a write whose outcome is unknown: its key, for the reviewer
    retry: NotRequired[bool]  # the reviewer chose to run that write again under the same key
    settled: NotRequired[str]  # the reviewer marked that write done, with this result text


class CallRecord(TypedDict):
    """One call that reached act or the gate, for repeat detection and the handoff check."""

    call_id: str  # the model's tool_call_id
    name: str  # tool name
    canonical_args: str  # arguments as sorted-key JSON
    outcome: Outcome  # ran ok, failed, blocked as a repeat, or rejected by a human
    turn: str  # the turn (run) it belongs to: repeat and rejection checks look at this turn only


class AgentState(TypedDict, total=False):
    """What a run carries from step to step; everything here lands in Redis."""

    messages: Annotated[list[AnyMessage], add_messages]  # the working context
    goal: str  # the user's goal, repeated to the model on every call
    constraints: Annotated[list[str], keep_constraints]  # hard constraints of every turn so far
    memories: list[str]  # long-term records recalled for this user at the start (data)
    plan_notes: str  # the model's text that came with its latest tool calls
    proposed: list[ProposedCall]  # calls of the latest plan step awaiting act or the gate
    model_calls: int  # plan steps taken
    tool_errors: int  # failed tool observations, malformed calls included
    tokens: int  # model tokens used so far
    tainted: bool  # the run has read untrusted tool output
    call_log: Annotated[list[CallRecord], operator.add]  # calls in order, with outcomes, every turn
    turn_id: str  # the current turn: a new run on the thread starts a new one
    summary: str | None  # compaction handoff record (JSON of nodes.handoff.Handoff)
    needs_compaction: bool  # observe found the context past the trigger
    end_requested: str | None  # a reviewer's reason to end the run at the gate
    stop_reason: StopReason | None  # set once a stop condition holds
    answer: str | None  # final or partial answer
    started_at: float  # wall-clock start of the turn, epoch seconds (informative)
    active_s: float  # seconds spent running this turn's steps: the deadline counts these


def turn_calls(state: AgentState) -> list[CallRecord]:
    """The call records of the current turn (records of older runs have another turn)."""
    turn = state.get("turn_id")
    return [r for r in state.get("call_log") or [] if r.get("turn") == turn]


def call_record(state: AgentState, call: ProposedCall, outcome: Outcome) -> CallRecord:
    """What the state keeps of a finished call: its canonical arguments and outcome."""
    return CallRecord(
        call_id=call["id"],
        name=call["name"],
        canonical_args=canonical(call["args"]),
        outcome=outcome,
        turn=state.get("turn_id") or "",
    )
