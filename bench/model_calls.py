"""Model calls and tokens of the order-support workflow and the agent graph.

Against LangGraph's prebuilt ReAct agent, same model and tools, on the seed document's order cases.

The agent is the registered agent graph built with the same two order tools the ReAct
agent gets (`get_order`, `get_tracking`), so the comparison is of prompts, not of
how many tool schemas each is handed.

    python -m bench.model_calls

Uses the offline model unless OPENAI_API_KEY or OPENAI_BASE_URL is set. Starts its own
redis-server on a free port. Prints, per case and in total, success, model calls and
tokens, and the ratios order_support / ReAct and agent / ReAct measured in this run.
"""

from __future__ import annotations

import sys
import tempfile
import uuid
import warnings
from pathlib import Path
from typing import Any
from uuid import UUID

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import redis
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.outputs import LLMResult
from langchain_core.tools import StructuredTool
from langgraph.prebuilt import create_react_agent

from graphwright import Orchestrator, Settings
from graphwright.graphs.agent import build_agent_graph
from graphwright.graphs.context import Graph, GraphContext
from graphwright.models import make_model
from graphwright.testing.redis_servers import start_server
from graphwright.tools.builtin import build_registry
from graphwright.tools.executor import ToolCall, ToolExecutor
from graphwright.tools.registry import ToolRegistry

CASES = [  # (case, input, text the answer must contain)
    ("A1001 shipped", "订单 A1001 到哪了？", "派送中"),
    ("A1002 paid", "订单 A1002 发货了吗？", "已付款"),
    ("unknown id", "帮我查一下订单 A9999", "没有找到"),
    ("missing id", "我的快递到哪了？", "订单号"),
    ("free-form id", "我上周买的耳机，单号是 a 1001，现在到哪了？", "派送中"),
]
ORDER_TOOLS = ("get_order", "get_tracking")


class Meter(BaseCallbackHandler):
    """Counts chat model calls and their tokens, whoever makes them."""

    def __init__(self) -> None:
        self.calls = 0
        self.tokens = 0

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        **kwargs: Any,
    ) -> None:
        self.calls += 1

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        for generation in response.generations[0]:
            usage = getattr(getattr(generation, "message", None), "usage_metadata", None) or {}
            self.tokens += int(usage.get("total_tokens") or 0)


def order_tools() -> ToolRegistry:
    return ToolRegistry([spec for spec in build_registry() if spec.name in ORDER_TOOLS])


def order_agent(ctx: GraphContext) -> Graph:
    """The agent graph with the order tools only (what the ReAct agent is given)."""
    return build_agent_graph(
        tools=order_tools(),
        model=ctx.model,
        redis_client=ctx.redis_client,
        policy=ctx.policy,
        limits=ctx.limits,
        keys=ctx.keys,
        checkpointer=ctx.checkpointer,
        store=ctx.store,
    )


def react_tools(executor: ToolExecutor, thread: str) -> list[StructuredTool]:
    """The same order tools, run through the same executor, as plain LangChain tools."""
    out = []
    for spec in build_registry():
        if spec.name not in ORDER_TOOLS:
            continue

        def run(_name: str = spec.name, **kwargs: Any) -> str:
            call = ToolCall(name=_name, args=kwargs, id=uuid.uuid4().hex)
            return executor.execute(call, thread_id=thread).for_model()

        out.append(
            StructuredTool.from_function(
                func=run, name=spec.name, description=spec.description, args_schema=spec.args_model
            )
        )
    return out


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        server = start_server(Path(tmp))
        try:
            settings = Settings(
                _env_file=None,
                REDIS_URL=server.url,  # type: ignore[call-arg]
                GRAPHWRIGHT_KEY_PREFIX="bench",
            )
            orch = Orchestrator(settings=settings)
            orch.graphs.register("order_agent", order_agent)
            model = make_model(settings)
            executor = ToolExecutor(
                build_registry(), redis.Redis.from_url(server.url), keys=orch.keys
            )
            rows = []
            for case, text, expected in CASES:
                row: dict[str, Any] = {"case": case}
                for graph in ("order_support", "order_agent"):
                    meter = Meter()
                    orch.model.callbacks = [meter]
                    result = orch.invoke(graph, text)
                    name = "agent" if graph == "order_agent" else graph
                    row[name] = (expected in (result.answer or ""), meter.calls, meter.tokens)
                orch.model.callbacks = None
                meter = Meter()
                thread = uuid.uuid4().hex
                with (
                    warnings.catch_warnings()
                ):  # moved to the `langchain` package, not a dependency here
                    warnings.simplefilter("ignore")
                    react = create_react_agent(model, react_tools(executor, thread))
                out = react.invoke({"messages": [HumanMessage(text)]}, {"callbacks": [meter]})
                row["react"] = (
                    expected in str(out["messages"][-1].content),
                    meter.calls,
                    meter.tokens,
                )
                rows.append(row)
            report(rows, type(model).__name__)
        finally:
            server.stop()


def report(rows: list[dict[str, Any]], model_name: str) -> None:
    graphs = ("order_support", "agent", "react")
    print(f"model: {model_name}; cells are success / model calls / tokens")
    print(f"{'case':<14}" + "".join(f"{g:>22}" for g in graphs))
    for row in rows:
        cells = "".join(
            f"{('ok' if row[g][0] else 'FAIL') + f' / {row[g][1]} / {row[g][2]}':>22}"
            for g in graphs
        )
        print(f"{row['case']:<14}{cells}")
    totals = {
        g: (sum(r[g][0] for r in rows), sum(r[g][1] for r in rows), sum(r[g][2] for r in rows))
        for g in graphs
    }
    print(
        f"{'total':<14}"
        + "".join(f"{f'{t[0]}/{len(rows)} / {t[1]} / {t[2]}':>22}" for t in totals.values())
    )
    base_calls, base_tokens = totals["react"][1], totals["react"][2]
    for g in ("order_support", "agent"):
        print(
            f"{g} / react: model calls {totals[g][1] / base_calls:.2f}x, "
            f"tokens {totals[g][2] / base_tokens:.2f}x, success {totals[g][0]}/{len(rows)} "
            f"vs {totals['react'][0]}/{len(rows)}"
        )


if __name__ == "__main__":
    main()
