"""What a picked-up HTTP run gives its graph: its input, a gate's decision, or its checkpoint.

A mixin of `execution.Executor`. A new run's input gets the user's memories recalled into
it; a run taken over after its process died continues from its checkpoint, or is run as new
when it saved none.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import RunnableConfig

from graphwright.graphs.gates import gate_of
from graphwright.graphs.registry import Graph, GraphSpec, RunInput
from graphwright.inputs import user_messages
from graphwright.nodes.gate_models import GateRequest
from graphwright.server.runs.payloads import command_of, goal_of, graph_input
from graphwright.server.schemas.run_bodies import RunCreate

if TYPE_CHECKING:
    from graphwright.orchestrator import Orchestrator
    from graphwright.server.records.run_steps import RunSteps
    from graphwright.server.records.run_store import RunStore

FRESH = object()  # a recovered run with nothing saved: its payload is made as for a new one


class StartPayload:
    """The payload a run's graph starts from (`payload`), for `Executor.prepare`."""

    orch: Orchestrator  # set by `Executor.__init__`
    store: RunStore
    steps: RunSteps

    async def payload(
        self,
        spec: GraphSpec,
        graph: Graph,
        config: Any,
        body: RunCreate,
        recovering: bool,
        thread_id: str,
        run_id: str,
        raw: dict[str, str],
    ) -> Any:
        """Read on the run's loop (its thread's state, its record `raw`): no thread hop."""
        if recovering:
            recovered = await self.recovered_payload(
                spec, graph, config, body, thread_id, run_id, raw
            )
            if recovered is not FRESH:
                return recovered
        if body.command is not None:
            gate, at = await gates(graph, config, thread_id)
            if gate is not None:  # remember which gate the decision answers
                await self.steps.update(
                    thread_id,
                    run_id,
                    config["configurable"].get("gw_fence"),
                    gate=json.dumps(sorted({c.interrupt_id or "" for c in gate.calls})),
                )
            return command_of(spec, graph, config, body, at)
        return graph_input(spec, body.input)  # a new input: `recall` adds the user's memories

    async def recall(
        self, spec: GraphSpec, thread_id: str, body: RunCreate, payload: Any, fence: int | None
    ) -> None:
        """Recall the user's memories into a new input and note what to remember when it ends.

        Only a run that names its user (`metadata.user_id`), of a graph with an input model.
        """
        user = (body.metadata or {}).get("user_id")
        if user is None or spec.make_input is None or not isinstance(payload, dict):
            return
        memories = self.orch.user_memory
        scopes = memories.scopes(str(user))
        run_input = RunInput.model_validate(
            goal_of(body.input if isinstance(body.input, dict) else None)
        )
        await memories.anote(thread_id, str(user), user_messages(payload, run_input), fence)
        if spec.uses_memory:
            payload["memories"] = await memories.alines(scopes)

    async def recovered_payload(
        self,
        spec: GraphSpec,
        graph: Graph,
        config: Any,
        body: RunCreate,
        thread_id: str,
        run_id: str,
        raw: dict[str, str],
    ) -> Any:
        """Finish from the checkpoint.

        A decision is applied again only to its own gate; `FRESH` when the run saved no checkpoint.
        """
        recorded = raw.get("gate")
        if body.command is not None and recorded is not None:
            gate, at = await gates(graph, config, thread_id)
            current = sorted({c.interrupt_id or "" for c in gate.calls}) if gate else None
            if current == json.loads(recorded):  # the decision never got applied
                return command_of(spec, graph, config, body, at)
        elif self.saves_first(body) and not await checkpointed(graph, thread_id, run_id):
            # Taken over before its first checkpoint (none of its own anywhere in the thread,
            # not only at its head): nothing of the run is in the thread, and
            # its input, durable in its record since its creation, is run as if new (the head
            # would miss it: no input at all, or the previous turn's end).
            return FRESH
        config["configurable"].pop("checkpoint_id", None)
        return None  # continue from the last checkpoint (or find that it had finished)

    def saves_first(self, body: RunCreate) -> bool:
        """Whether the run saves its input before any node runs.

        With `exit` durability it saves nothing until its end, so a run with no checkpoint may have
        had effects, and running its input again could repeat them.
        """
        return (body.durability or self.orch.settings.durability) != "exit"


async def gates(
    graph: Graph, config: Any, thread_id: str
) -> tuple[GateRequest | None, GateRequest | None]:
    """The gate pending at the thread's head, and at the run's checkpoint.

    One read: the same state, unless the run names a checkpoint of its own.
    """
    head = gate_of(await graph.aget_state({"configurable": {"thread_id": thread_id}}))
    if not config["configurable"].get("checkpoint_id"):
        return head, head
    return head, gate_of(await graph.aget_state(config))


async def checkpointed(graph: Graph, thread_id: str, run_id: str) -> bool:
    """Whether the run saved a checkpoint, at the thread's head or under it.

    A run whose process died can see the thread moved on by a writer outside the run line (a
    resume from the CLI or the Python API that settled its write), and its input, run again as
    new, would plan that write again under a new call id.
    """
    config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    if ((await graph.aget_state(config)).metadata or {}).get("run_id") == run_id:
        return True
    async for _ in graph.aget_state_history(config, filter={"run_id": run_id}, limit=1):
        return True
    return False
