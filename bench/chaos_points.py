"""One chaos point: where its kill landed, how a reviewer settled it, and what it left behind."""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import time
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.chaos_graphs import effects_of
from graphwright import Orchestrator, Settings
from graphwright.checkpoints.keys import Keys
from graphwright.offline import OfflineChatModel

if TYPE_CHECKING:
    from bench.chaos import Campaign

GOAL = "book the Aurora room"
DEADLINE_S = 90.0


@dataclass
class Point:
    n: int
    via: str
    gated: bool
    thread: str
    where: str = "after the end (no kill)"
    first_span: float = 0.0
    approve_span: float = 0.0
    settled: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)  # the reviewer's, in order
    unknowns: int = 0
    recovery_killed: int = 0
    recovered: bool = False
    duplicates: int = 0
    lost: int = 0
    problem: str = ""

    @property
    def ok(self) -> bool:
        return self.recovered and not self.duplicates and not self.lost and not self.problem


def cli_child(argv: list[str], env: dict[str, str], out: str) -> None:
    """A graphwright command in this (forked) process, its output in `out`."""
    os.environ.update(env)
    with open(out, "w") as sink:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        sys.stdout = sys.stderr = os.fdopen(1, "w", buffering=1)
        from graphwright.cli import app

        code = 0
        try:
            app(argv, prog_name="graphwright")
        except SystemExit as exc:
            code = int(exc.code or 0) if not isinstance(exc.code, str) else 1
        sys.stdout.flush()
    os._exit(code)


def wait_or_kill(proc: Any, at: float | None) -> bool:
    """Wait for `proc` to end, or SIGKILL it `at` seconds from now; True if killed."""
    if at is not None:
        proc.join(max(at, 0.0))
        if proc.is_alive():
            os.kill(proc.pid, signal.SIGKILL)
            proc.join()
            return True
    proc.join()
    return False


class Reviewer:
    """Drives one point's thread to its end the way a person at the CLI would."""

    def __init__(
        self, c: Campaign, point: Point, env: dict[str, str], effects: Path, graph: str
    ) -> None:
        self.c, self.point, self.env, self.effects, self.graph = c, point, env, effects, graph
        self.keys = Keys(prefix=env["GRAPHWRIGHT_KEY_PREFIX"])
        self._runs = 0

    @cached_property
    def orch(self) -> Orchestrator:
        settings = Settings(
            _env_file=None,
            REDIS_URL=self.env["REDIS_URL"],  # type: ignore[call-arg]
            GRAPHWRIGHT_KEY_PREFIX=self.env["GRAPHWRIGHT_KEY_PREFIX"],
            GRAPHWRIGHT_GRAPHS="bench.chaos_graphs:register",
            GRAPHWRIGHT_REDIS_CLUSTER=self.env.get("GRAPHWRIGHT_REDIS_CLUSTER") == "1",
        )
        return Orchestrator(settings=settings, model=OfflineChatModel())

    def cli(self, argv: list[str], kill_at: float | None = None) -> tuple[int, str, bool]:
        self._runs += 1
        out = self.effects / f"cmd{self._runs}.out"
        proc = self.c.spawn([*argv, "--json"], self.env, out)
        killed = wait_or_kill(proc, kill_at)
        return proc.exitcode or 0, out.read_text() if out.exists() else "", killed

    # --- settling ---

    def approve_and_kill(self, at: float) -> str:
        pending = self.orch.state(self.point.thread).pending
        if pending is None or any(c.kind != "approval" for c in pending.calls):
            return "after the end (no kill)"
        _, _, killed = self.cli(["resume", self.point.thread, "--approve"], kill_at=at)
        return f"{classify(self)} (approval)" if killed else "after the end (no kill)"

    def approve_and_kill_after_write(self, after: float) -> str:
        """Approve.

        And SIGKILL the approving process `after` seconds once its write is recorded `done`: the
        moment between the effect and the step that holds its result.
        """
        pending = self.orch.state(self.point.thread).pending
        if pending is None or any(c.kind != "approval" for c in pending.calls):
            return "after the end (no kill)"
        self._runs += 1
        proc = self.c.spawn(
            ["resume", self.point.thread, "--approve", "--json"],
            self.env,
            self.effects / f"cmd{self._runs}.out",
        )
        records = f"{self.keys.prefix}:{{{self.point.thread}}}:idem:*"
        while proc.is_alive():
            keys = list(self.orch.client.scan_iter(match=records))
            if any(self.orch.client.hget(k, "status") == b"done" for k in keys):
                break
            time.sleep(0.005)
        killed = wait_or_kill(proc, after)
        return f"{classify(self)} (approval)" if killed else "after the end (no kill)"

    def next_command(self) -> list[str] | None:
        thread = self.point.thread
        if not self.orch.meta(thread).get("graph"):
            return ["run", self.graph, GOAL, "--thread", thread]  # killed before it began
        state = self.orch.state(thread)
        if state.pending is not None:
            unknown = [c for c in state.pending.calls if c.kind == "outcome_unknown"]
            if not unknown:
                return ["resume", thread, "--approve"]
            self.point.unknowns += 1
            if unknown[0].idempotency_key in effects_of(self.effects, thread):
                self.point.settled.append("mark_done")
                return ["resume", thread, "--mark-done", "the booking exists (checked by hand)"]
            self.point.settled.append("retry")
            return ["resume", thread, "--retry"]
        if state.next or (state.checkpoint_id and state.status == "failed"):
            return ["resume", thread]  # a step stopped mid-way (failed: its writes may be saved)
        if state.values.get("stop_reason"):
            return None
        return ["run", self.graph, GOAL, "--thread", thread]  # no checkpoint was written

    def settle(self, rng: random.Random, *, recovery_kill: bool) -> None:
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            command = self.next_command()
            if command is None:
                break
            kill_at = None
            if recovery_kill:
                kill_at, recovery_kill = rng.uniform(0, max(self.point.first_span, 0.5)), False
            started = time.monotonic()
            code, output, killed = self.cli(command, kill_at)
            self.point.commands.append(
                " ".join(command[:1] + command[2:3]) + (" (killed)" if killed else "")
            )
            if "--approve" in command and not killed and not self.point.approve_span:
                self.point.approve_span = time.monotonic() - started
            self.point.recovery_killed += killed
            if code == 2 and "already running" in output:
                time.sleep(0.1)
        self.judge()

    def judge(self) -> None:
        p = self.point
        state = self.orch.state(p.thread)
        p.recovered = bool(
            state.values.get("stop_reason") == "answered"
            and not state.next
            and state.pending is None
        )
        found = effects_of(self.effects, p.thread)
        p.duplicates = max(0, len(found) - 1)
        told_done = [
            m
            for m in state.values.get("messages") or []
            if m.get("type") == "tool"
            and m.get("name") == "book"
            and json.loads(m.get("content") or "{}").get("ok")
        ]
        p.lost = int(bool(told_done) and not found)
        if not p.recovered:
            p.problem = f"not finished: next={state.next} pending={state.pending is not None}"
        elif len(found) != 1 or len(told_done) != 1:
            p.problem = f"{len(found)} effect(s), {len(told_done)} acknowledged booking(s)"
        self.orch.close()  # its asyncio client too (a cluster client warns when left open)


def classify(r: Reviewer) -> str:
    """Where the kill landed, read from what it left behind."""
    thread = r.point.thread
    if not r.orch.meta(thread).get("graph"):
        return "before the run was recorded"
    records = [
        r.orch.client.hget(k, "status")
        for k in r.orch.client.scan_iter(match=f"{r.keys.prefix}:{{{thread}}}:idem:*")
    ]
    effects = len(effects_of(r.effects, thread))
    state = r.orch.state(thread)
    if b"claimed" in records:
        return "inside the write, " + ("after its effect" if effects else "before its effect")
    if b"done" in records:
        return (
            "after the write was recorded"
            if state.next or not state.values.get("answer")
            else "after the end"
        )
    if state.pending is not None:
        return "at the gate"
    if state.values.get("stop_reason"):
        return "after the end"
    return f"before the write (next: {', '.join(state.next) or 'nothing checkpointed'})"
