"""Run the agent graph with either model: the offline one, or the real ChatOpenAI client
against the scripted OpenAI-compatible server. Scripts are ignored by the offline model."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID, uuid4

import redis
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig

from graphwright.checkpoints.keys import Keys
from graphwright.checkpoints.redis import RedisSaver
from graphwright.checkpoints.trace import TraceWriter
from graphwright.graphs.agent import AgentGraph, build_agent_graph, start_input
from graphwright.graphs.context import GraphContext
from graphwright.nodes.deps import Limits
from graphwright.nodes.model_call import ModelCall
from graphwright.offline import OfflineChatModel
from graphwright.testing.scripted_openai import Reply, ScriptedOpenAI
from graphwright.tools.builtin import build_registry
from graphwright.tools.policy import Policy
from graphwright.tools.registry import ToolRegistry


class RequestRecorder(BaseCallbackHandler):
    """Every prompt sent to a chat model, as LangChain messages (works for both models)."""

    def __init__(self) -> None:
        self.prompts: list[list[BaseMessage]] = []

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        **kwargs: Any,
    ) -> None:
        self.prompts.extend(messages)


@dataclass
class AgentRig:
    kind: str  # "offline" or "openai"
    client: redis.Redis
    keys: Keys
    server: ScriptedOpenAI | None
    recorder: RequestRecorder = field(default_factory=RequestRecorder)

    @property
    def scripted(self) -> bool:
        return self.server is not None

    def model(self) -> BaseChatModel:
        if self.server is None:
            return OfflineChatModel()
        return self.server.chat_model()

    def build(
        self,
        *,
        tools: ToolRegistry | None = None,
        limits: Limits | None = None,
        policy: Policy | None = None,
        clock: Callable[[], float] = time.monotonic,
        model: BaseChatModel | None = None,
        model_call: ModelCall | None = None,
    ) -> AgentGraph:
        return build_agent_graph(
            tools=tools or build_registry(),
            model=model or self.model(),
            redis_client=self.client,
            policy=policy,
            limits=limits,
            keys=self.keys,
            checkpointer=RedisSaver(self.client, prefix=self.keys.prefix),
            clock=clock,
            model_call=model_call,
        )

    def context(self, limits: Limits | None = None) -> GraphContext:
        """What a registered graph builder gets, on this rig's Redis and model."""
        return GraphContext(
            model=self.model(),
            redis_client=self.client,
            keys=self.keys,
            checkpointer=RedisSaver(self.client, prefix=self.keys.prefix),
            limits=limits or Limits(),
        )

    def lane(self, marker: str, *replies: Reply) -> None:
        """Replies for requests whose system prompt contains `marker` (parallel workers)."""
        if self.server is not None:
            self.server.load_for(marker, *replies)

    def script(self, *replies: Reply) -> None:
        if self.server is not None:
            self.server.load(*replies)

    def config(self, thread_id: str | None = None) -> RunnableConfig:
        return {
            "configurable": {"thread_id": thread_id or uuid4().hex},
            "callbacks": [self.recorder],
        }

    def run(
        self,
        graph: AgentGraph,
        goal: str,
        constraints: list[str] | None = None,
        config: RunnableConfig | None = None,
    ) -> tuple[dict[str, Any], RunnableConfig]:
        config = config or self.config()
        return graph.invoke(start_input(goal, constraints), config), config

    def trace(self, config: RunnableConfig) -> list[dict[str, Any]]:
        return TraceWriter(self.client, self.keys).read(config["configurable"]["thread_id"])

    def tool_events(self, config: RunnableConfig) -> list[dict[str, Any]]:
        """The trace's tool executions, in order."""
        return [e for e in self.trace(config) if e["kind"] == "tool_call"]

    def tools_called(self, config: RunnableConfig) -> list[str]:
        return [e["tool"] for e in self.tool_events(config)]

    def effects(self) -> dict[str, int]:
        """Side effects counted from what the tools left behind (outbox and calendar)."""
        counts = {"send_email": len(self.outbox()), "create_event": len(self.calendar())}
        return {tool: n for tool, n in counts.items() if n}

    def outbox(self) -> list[dict[str, Any]]:
        return [json.loads(m) for m in self.client.lrange(self.keys.outbox(), 0, -1)]

    def calendar(self) -> list[dict[str, Any]]:
        return [json.loads(v) for v in self.client.hvals(self.keys.calendar())]


class FakeClock:
    """A clock a test moves by hand: active time is measured with it, not waited for."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def assert_every_call_answered(messages: list[Any]) -> None:
    """OpenAI's rule: each assistant tool call gets one tool message before anything else."""
    pending: list[str] = []
    for m in messages:
        if m.type == "tool":
            assert m.tool_call_id in pending, f"tool message {m.tool_call_id} answers no open call"
            pending.remove(m.tool_call_id)
            continue
        assert not pending, f"calls {pending} were never answered"
        if m.type == "ai":
            pending = [c["id"] for c in [*m.tool_calls, *m.invalid_tool_calls]]
    assert not pending, f"calls {pending} were never answered"
