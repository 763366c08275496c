"""The human gate's boundary: what a reviewer is shown, and the decisions they may send."""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from graphwright.nodes.canonical import canonical
from graphwright_errors import UserError

if TYPE_CHECKING:  # the CLI shows gates without LangGraph, which these modules import
    from graphwright.nodes.state import ProposedCall
    from graphwright.tools.registry import ToolRegistry


class GateDecisionError(UserError):
    """A decision that does not fit the pending gate; nothing was changed."""


def digest(name: str, args: dict[str, Any] | str) -> str:
    """Short hash binding a decision to the exact arguments it was made for."""
    return hashlib.sha256(f"{name}\n{canonical(args)}".encode()).hexdigest()[:16]


class PendingCall(BaseModel):
    """One call waiting for a reviewer."""

    id: str
    tool: str
    args: dict[str, Any] | str
    risk: str
    reason: str
    digest: str
    server: str | None = None  # the MCP server the tool comes from, if any
    worker: str | None = None  # the worker subgraph waiting, in an orchestrator run
    interrupt_id: str | None = None  # LangGraph's id of the interrupt holding this call
    # "outcome_unknown": a write that may have happened (its process died mid-call, or it
    # timed out); the reviewer answers retry, mark_done or reject instead of approve or edit.
    kind: Literal["approval", "outcome_unknown"] = "approval"
    idempotency_key: str | None = None  # the key a retry runs under, for outcome_unknown
    description: str | None = None  # what the reviewer is told (LangChain's HITL description)
    allowed_decisions: list[str] = Field(default_factory=lambda: ["approve", "edit", "reject"])
    origin: Literal["graphwright", "langchain"] = "graphwright"  # whose interrupt raised it


class GateRequest(BaseModel):
    """The interrupt payload: every call of the step that needs approval."""

    kind: Literal["approval"] = "approval"
    calls: list[PendingCall]
    error: str | None = None  # why the previous answer was refused, when re-asked
    # The same calls in LangChain's HITLRequest shape, so chat UIs built for
    # HumanInTheLoopMiddleware render graphwright's gate too; always derived from calls.
    action_requests: list[dict[str, Any]] = Field(default_factory=list)
    review_configs: list[dict[str, Any]] = Field(default_factory=list)

    @model_validator(mode="after")
    def _hitl_view(self) -> GateRequest:
        self.action_requests = [
            {"name": c.tool, "args": c.args, "description": c.description or c.reason}
            for c in self.calls
        ]
        configs: dict[str, list[str]] = {}
        for c in self.calls:
            configs.setdefault(c.tool, c.allowed_decisions)
        self.review_configs = [
            {"action_name": name, "allowed_decisions": allowed} for name, allowed in configs.items()
        ]
        return self


class _Decision(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Approve(_Decision):
    """Run the pending call as proposed."""

    action: Literal["approve"] = "approve"
    digest: str = Field(description="digest of the pending call being approved")


class Edit(_Decision):
    """Run the pending call with other arguments."""

    action: Literal["edit"] = "edit"
    digest: str = Field(description="digest of the pending call being replaced")
    args: dict[str, Any] = Field(description="new arguments; validated against the tool's schema")


class Reject(_Decision):
    """Do not run the call; the model is told why."""

    action: Literal["reject"] = "reject"
    reason: str = Field(min_length=1, description="told to the model as the call's result")
    digest: str | None = None
    end_run: bool = Field(default=False, description="stop the run instead of letting it re-plan")


class Retry(_Decision):
    """Run a write whose outcome is unknown again, under the same idempotency key."""

    action: Literal["retry"] = "retry"
    digest: str = Field(description="digest of the pending call being retried")


class MarkDone(_Decision):
    """A write whose outcome is unknown did happen; the model is told `result`."""

    action: Literal["mark_done"] = "mark_done"
    digest: str = Field(description="digest of the pending call being settled")
    result: str = Field(min_length=1, description="what the write did, told to the model")


AnyDecision = Approve | Edit | Reject | Retry | MarkDone
Decision = Annotated[AnyDecision, Field(discriminator="action")]
UNKNOWN_ACTIONS = ("retry", "mark_done", "reject")
_decision = TypeAdapter(Decision)
_decision_map = TypeAdapter(dict[str, Decision])


def gate_request(calls: list[ProposedCall], registry: ToolRegistry) -> GateRequest:
    """The gate's request for the calls that need a reviewer."""
    pending = []
    for call in calls:
        if call["action"] not in ("needs_approval", "outcome_unknown"):
            continue
        spec = registry.get(call["name"])
        unknown = call["action"] == "outcome_unknown"
        pending.append(
            PendingCall(
                id=call["id"],
                tool=call["name"],
                args=call["args"],
                risk=spec.risk if spec else "unknown",
                reason=call["reason"],
                digest=digest(call["name"], call["args"]),
                server=spec.server if spec else None,
                kind="outcome_unknown" if unknown else "approval",
                idempotency_key=call.get("idempotency_key") if unknown else None,
            )
        )
    return GateRequest(calls=pending)


def parse_decisions(
    request: GateRequest, answer: Any, registry: ToolRegistry
) -> dict[str, AnyDecision]:
    """Validate a reviewer's answer against the pending calls, or raise GateDecisionError.

    One decision answers a gate with one pending call; several calls take a map of
    call id to decision, with every pending call answered.
    """
    if isinstance(answer, dict) and isinstance(answer.get("decisions"), list):
        answer = from_langchain(request.calls, answer["decisions"])
    try:
        if isinstance(answer, dict) and "action" not in answer:
            decisions = _decision_map.validate_python(answer)
        elif len(request.calls) == 1:
            decisions = {request.calls[0].id: _decision.validate_python(answer)}
        else:
            raise GateDecisionError(
                f"{len(request.calls)} calls are pending "
                f"({', '.join(c.id for c in request.calls)}); "
                "answer with a map of call id to decision"
            )
    except ValidationError as exc:
        raise GateDecisionError(
            f"the decision is malformed: {exc.errors()[0]['msg']} "
            f"at {'.'.join(map(str, exc.errors()[0]['loc']))}"
        ) from exc
    _check_against(request, decisions, registry)
    return decisions


def _check_against(
    request: GateRequest, decisions: dict[str, AnyDecision], registry: ToolRegistry
) -> None:
    """Every pending call answered, none other, each for the arguments the reviewer saw."""
    pending = {c.id: c for c in request.calls}
    unknown = sorted(set(decisions) - set(pending))
    missing = sorted(set(pending) - set(decisions))
    if unknown:
        raise GateDecisionError(
            f"no pending call has id {', '.join(unknown)}; pending: {', '.join(pending)}"
        )
    if missing:
        raise GateDecisionError(
            f"every pending call needs a decision; missing: {', '.join(missing)}"
        )
    for call_id, decision in decisions.items():
        call = pending[call_id]
        if decision.digest is not None and decision.digest != call.digest:
            raise GateDecisionError(
                f"the decision for {call_id} was made for other arguments (digest "
                f"{decision.digest}, pending {call.digest}: {call.tool} "
                f"{json.dumps(call.args, ensure_ascii=False)}); review the pending call again"
            )
        check_kind(call, decision)
        if isinstance(decision, Edit):
            _check_edit(call, decision, registry)


def _check_edit(call: PendingCall, decision: Edit, registry: ToolRegistry) -> None:
    spec = registry.get(call.tool)
    if spec is None:
        raise GateDecisionError(f"{call.tool!r} is not an allowed tool")
    try:
        spec.args_model.model_validate(decision.args)
    except ValidationError as exc:
        raise GateDecisionError(
            f"the edited arguments for {call.tool} are invalid: "
            + "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        ) from exc


def check_kind(call: PendingCall, decision: AnyDecision) -> None:
    """Approve and edit answer an approval; retry and mark_done answer an unknown outcome."""
    unknown = call.kind == "outcome_unknown"
    if unknown and decision.action not in UNKNOWN_ACTIONS:
        raise GateDecisionError(
            f"whether {call.tool} (call {call.id}, key {call.idempotency_key}) took effect is "
            "unknown; answer retry, mark_done with its result, or reject"
        )
    if not unknown and decision.action in ("retry", "mark_done"):
        raise GateDecisionError(
            f"call {call.id} waits for approval; answer approve, edit or reject"
        )


def decide_all(
    request: GateRequest,
    action: str,
    *,
    args: dict[str, Any] | None = None,
    reason: str | None = None,
    end_run: bool = False,
    result: str | None = None,
) -> dict[str, AnyDecision]:
    """One action for the pending calls, bound to their digests (what a reviewer's button sends).

    `edit` takes the new arguments of the single pending call, or a map of call id to
    arguments when several wait; pending calls the map does not name are approved.
    """
    if action == "approve":
        return {c.id: Approve(digest=c.digest) for c in request.calls}
    if action == "retry":
        return {c.id: Retry(digest=c.digest) for c in request.calls}
    if action == "mark_done":
        if not result:
            raise GateDecisionError("mark_done needs the write's result; it is told to the model")
        return {c.id: MarkDone(digest=c.digest, result=result) for c in request.calls}
    if action == "reject":
        if not reason:
            raise GateDecisionError("a rejection needs a reason; it is told to the model")
        return {
            c.id: Reject(reason=reason, digest=c.digest, end_run=end_run) for c in request.calls
        }
    if action == "edit":
        return _edits(request, args)
    raise GateDecisionError(
        f"unknown action {action!r}; use approve, edit or reject (retry, mark_done or reject "
        "for a call whose outcome is unknown)"
    )


def _edits(request: GateRequest, args: dict[str, Any] | None) -> dict[str, AnyDecision]:
    """An edit's decisions: the named calls edited, the others approved."""
    if not isinstance(args, dict):
        raise GateDecisionError("an edit needs the new arguments as a JSON object")
    ids = {c.id for c in request.calls}
    if args and set(args) <= ids and all(isinstance(v, dict) for v in args.values()):
        per_call: dict[str, dict[str, Any]] = args
    elif len(request.calls) == 1:
        per_call = {request.calls[0].id: args}
    else:
        raise GateDecisionError(
            f"{len(request.calls)} calls are pending; give the edit as "
            f'{{"<call id>": {{...arguments...}}}} for {", ".join(sorted(ids))}'
        )
    return {
        c.id: Edit(digest=c.digest, args=per_call[c.id])
        if c.id in per_call
        else Approve(digest=c.digest)
        for c in request.calls
    }


def from_langchain(calls: list[PendingCall], decisions: list[Any]) -> dict[str, dict[str, Any]]:
    """LangChain's `decisions` list as a map of call id to decision, by position.

    Each decision is bound to the digest of the call at its position (or to the
    `digest` it carries), so it cannot approve arguments the reviewer did not see.
    """
    if len(decisions) != len(calls):
        raise GateDecisionError(
            f"{len(decisions)} decision(s) for {len(calls)} pending call(s) "
            f"({', '.join(c.id for c in calls)}); give one per call, in order"
        )
    out: dict[str, dict[str, Any]] = {}
    for call, given in zip(calls, decisions, strict=True):
        kind = given.get("type") if isinstance(given, dict) else None
        if kind not in call.allowed_decisions:
            raise GateDecisionError(
                f"decision {kind!r} for {call.id} ({call.tool}) is not allowed; "
                f"allowed: {', '.join(call.allowed_decisions)}"
            )
        bound = str(given.get("digest") or call.digest)
        if kind == "approve":
            out[call.id] = {"action": "approve", "digest": bound}
        elif kind == "edit":
            action = given.get("edited_action") or {}
            if action.get("name", call.tool) != call.tool:
                raise GateDecisionError(
                    f"an edit of {call.id} cannot switch the tool from "
                    f"{call.tool} to {action.get('name')}"
                )
            out[call.id] = {"action": "edit", "digest": bound, "args": action.get("args")}
        else:
            out[call.id] = {
                "action": "reject",
                "digest": bound,
                "reason": given.get("message") or "rejected by the reviewer",
            }
    return out
