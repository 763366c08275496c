"""Graphs for the real-model tests, fitted to what llama-cpp-python's server can serve.

Its tool-call grammar cannot take a regex `pattern` (its converter writes `\\d`, which
llama.cpp's grammar parser refuses) or a long `maxLength` (the grammar passes the
parser's limits): either kills the server process. It cannot stream a reply while
`tool_choice` is `"auto"` either. So `real_agent` shows the model the built-in
tools' schemas without patterns and with strings of at most 100 characters (the executor
still validates every argument against the full schema), and `chat` has no tools, for
the CLI, which streams. Replies are capped at 256 tokens (llama-cpp-python ignores that for
tool arguments: the short strings bound those): a 135M model can ramble to the context's end.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from graphwright.graphs.agent import build_agent_graph
from graphwright.graphs.context import Graph, GraphContext
from graphwright.graphs.registry import GraphRegistry
from graphwright.nodes.tokens import chat_openai
from graphwright.tools.builtin import build_registry
from graphwright.tools.registry import ToolRegistry

MAX_CHARS = 100  # a string's longest form in the grammar: it bounds the reply as well


def servable(schema: Any) -> Any:
    if isinstance(schema, list):
        return [servable(v) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: servable(v) for k, v in schema.items() if k != "pattern"}
    if out.get("type") == "string":
        out["maxLength"] = min(int(out.get("maxLength", MAX_CHARS)), MAX_CHARS)
    return out


def real_tools() -> ToolRegistry:
    """The built-in tools, their schemas shown to the model without string constraints."""
    return ToolRegistry(
        replace(spec, json_schema=servable(spec.args_model.model_json_schema()))
        for spec in build_registry()
    )


def agent_on(tools: ToolRegistry, ctx: GraphContext) -> Graph:
    model = (
        ctx.model.model_copy(update={"max_tokens": 256}) if chat_openai(ctx.model) else ctx.model
    )
    return build_agent_graph(
        tools=tools,
        model=model,
        redis_client=ctx.redis_client,
        keys=ctx.keys,
        checkpointer=ctx.checkpointer,
        limits=ctx.limits,
        policy=ctx.policy,
        store=ctx.store,
    )


def register(graphs: GraphRegistry) -> None:
    graphs.register("real_agent", lambda ctx: agent_on(real_tools(), ctx), tools=real_tools)
    graphs.register("chat", lambda ctx: agent_on(ToolRegistry(), ctx), tools=ToolRegistry)
