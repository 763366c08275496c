"""The evaluation harness: run a suite of cases N times and report success, cost and stability."""

from __future__ import annotations

import json
import statistics
import time
import uuid
from importlib.resources import files
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from graphwright.nodes.gate_models import decide_all
from graphwright.orchestrator import Orchestrator
from graphwright.results import RunResult
from graphwright_errors import UserError


class Checks(BaseModel):
    """What an answer and its tool calls must and must not contain for a case to pass."""

    model_config = ConfigDict(extra="forbid")

    contains: list[str] = Field(default_factory=list, description="every one must be in the answer")
    not_contains: list[str] = Field(default_factory=list, description="none may be in the answer")
    tools_in_order: list[str] | None = Field(
        default=None, description="exactly these tools ran, in order"
    )
    tools_never: list[str] = Field(default_factory=list, description="none of these ran")
    stop_reason: str | None = None
    status: str | None = Field(
        default=None, description="completed, interrupted, stopped or failed"
    )
    max_steps: int | None = Field(default=None, description="most model calls allowed")


class Case(BaseModel):
    """One eval case: the input, the graph it runs on and the checks its run must pass."""

    model_config = ConfigDict(extra="forbid")

    id: str
    kind: Literal["normal", "boundary", "hostile"] = "normal"
    graph: str = "agent"
    input: str
    constraints: list[str] = Field(default_factory=list)
    decision: Literal["approve", "reject"] | None = Field(
        default=None, description="answer the gate this way if the run stops at one"
    )
    checks: Checks


class Suite(BaseModel):
    """A YAML eval suite: its cases and how many times each runs."""

    model_config = ConfigDict(extra="forbid")

    name: str
    runs: int = Field(default=3, ge=1)
    cases: list[Case] = Field(min_length=1)


class RunOutcome(BaseModel):
    """One run of a case: whether it passed, why not, and what it cost."""

    passed: bool
    failures: list[str]
    status: str
    answer: str | None
    tools: list[str]
    model_calls: int
    tool_calls: int
    tokens: int
    wall_s: float


class CaseReport(BaseModel):
    """A case's runs, and whether they agreed with each other."""

    id: str
    kind: str
    graph: str
    runs: list[RunOutcome]
    success_rate: float
    stable: bool = Field(description="all runs agree: same verdict, answer and tool calls")


class Report(BaseModel):
    """A suite's result: every case and the share of runs that passed."""

    suite: str
    runs_per_case: int
    cases: list[CaseReport]
    success_rate: float
    mean_model_calls: float
    max_model_calls: int
    mean_tool_calls: float
    mean_tokens: float
    mean_wall_s: float
    max_wall_s: float
    stability: float = Field(description="share of cases whose runs all agree")


def load_suite(path: str) -> Suite:
    """A YAML or JSON suite file; `seed` names the suite shipped with graphwright."""
    try:
        if path == "seed":
            text, name = (
                (files("graphwright") / "assets" / "seed_suite.yaml").read_text("utf-8"),
                path,
            )
        else:
            text, name = Path(path).read_text(encoding="utf-8"), path
    except OSError as exc:
        raise UserError(f"cannot read suite {path!r}: {exc.strerror}") from exc
    try:
        data = json.loads(text) if name.endswith(".json") else yaml.safe_load(text)
        return Suite.model_validate(data)
    except (ValueError, yaml.YAMLError) as exc:
        detail = exc.errors()[0] if isinstance(exc, ValidationError) else None
        where = (
            ".".join(map(str, detail["loc"])) + ": " + detail["msg"] if detail else str(exc)[:200]
        )
        raise UserError(f"suite {path!r} is not valid: {where}") from exc


def check(checks: Checks, result: RunResult, tools: list[str]) -> list[str]:
    """Every check that failed, in words."""
    answer = result.answer or ""
    out = [f"answer lacks {s!r}" for s in checks.contains if s not in answer]
    out += [f"answer contains {s!r}" for s in checks.not_contains if s in answer]
    if checks.tools_in_order is not None and tools != checks.tools_in_order:
        out.append(f"tools were {tools}, expected {checks.tools_in_order}")
    out += [f"{t} ran" for t in checks.tools_never if t in tools]
    if checks.stop_reason and result.stop_reason != checks.stop_reason:
        out.append(f"stop reason {result.stop_reason}, expected {checks.stop_reason}")
    if checks.status and result.status != checks.status:
        out.append(f"status {result.status}, expected {checks.status}")
    if checks.max_steps is not None and result.usage.model_calls > checks.max_steps:
        out.append(f"{result.usage.model_calls} model calls, at most {checks.max_steps} allowed")
    return out


def run_case(orch: Orchestrator, case: Case) -> RunOutcome:
    """Run a case once on a fresh thread and check it."""
    thread = f"eval-{case.id}-{uuid.uuid4().hex[:8]}"
    started = time.perf_counter()
    result = orch.invoke(
        case.graph, {"goal": case.input, "constraints": case.constraints}, thread_id=thread
    )
    calls, tokens = result.usage.model_calls, result.usage.tokens
    if result.pending is not None and case.decision:
        reason = "rejected by the evaluation suite" if case.decision == "reject" else None
        result = orch.resume(thread, decide_all(result.pending, case.decision, reason=reason))
        # Usage counts from the run's start, so it already includes the part before the gate.
        calls, tokens = result.usage.model_calls, result.usage.tokens or tokens
    wall = time.perf_counter() - started
    tools = [
        e["tool"] for e in orch.trace(thread) if e["kind"] == "tool_call" and not e.get("replayed")
    ]
    failures = check(
        case.checks,
        result.model_copy(update={"usage": result.usage.model_copy(update={"model_calls": calls})}),
        tools,
    )
    return RunOutcome(
        passed=not failures,
        failures=failures,
        status=result.status,
        answer=result.answer,
        tools=tools,
        model_calls=calls,
        tool_calls=len(tools),
        tokens=tokens,
        wall_s=wall,
    )


def run_suite(orch: Orchestrator, suite: Suite, runs: int | None = None) -> Report:
    """Run every case `runs` times (the suite's count by default) and report."""
    n = runs or suite.runs
    reports = []
    for case in suite.cases:
        outcomes = [run_case(orch, case) for _ in range(n)]
        # Parallel workers interleave their tool calls, so the set of calls is compared, not
        # the order.
        signatures = {(o.passed, o.answer, tuple(sorted(o.tools))) for o in outcomes}
        reports.append(
            CaseReport(
                id=case.id,
                kind=case.kind,
                graph=case.graph,
                runs=outcomes,
                success_rate=sum(o.passed for o in outcomes) / n,
                stable=len(signatures) == 1,
            )
        )
    every = [o for r in reports for o in r.runs]
    return Report(
        suite=suite.name,
        runs_per_case=n,
        cases=reports,
        success_rate=sum(o.passed for o in every) / len(every),
        mean_model_calls=statistics.fmean(o.model_calls for o in every),
        max_model_calls=max(o.model_calls for o in every),
        mean_tool_calls=statistics.fmean(o.tool_calls for o in every),
        mean_tokens=statistics.fmean(o.tokens for o in every),
        mean_wall_s=statistics.fmean(o.wall_s for o in every),
        max_wall_s=max(o.wall_s for o in every),
        stability=sum(r.stable for r in reports) / len(reports),
    )


def summary_rows(report: Report) -> list[dict[str, Any]]:
    """One row per case for the table."""
    return [
        {
            "case": r.id,
            "kind": r.kind,
            "graph": r.graph,
            "success": f"{sum(o.passed for o in r.runs)}/{len(r.runs)}",
            "model calls": f"{statistics.fmean(o.model_calls for o in r.runs):.1f}",
            "tool calls": f"{statistics.fmean(o.tool_calls for o in r.runs):.1f}",
            "tokens": f"{statistics.fmean(o.tokens for o in r.runs):.0f}",
            "wall ms": f"{1000 * statistics.fmean(o.wall_s for o in r.runs):.0f}",
            "stable": "yes" if r.stable else "no",
            "failures": "; ".join(sorted({f for o in r.runs for f in o.failures})),
        }
        for r in report.cases
    ]
