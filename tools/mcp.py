"""MCP tools as ordinary graphwright tool specs, named `server.tool`, under the same guard rails.

Risk and trust come from the tool's annotations unless the configuration overrides
them: `readOnlyHint: true` is a read, anything else a write; `openWorldHint` not
false means untrusted output; `idempotentHint: true` marks a write safe to run again
with the same idempotency key. Every write carries its key in the request's `_meta`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import mcp_types
from mcp.shared.exceptions import MCPError

from graphwright.tools.errors import InvalidInput, ToolFailure, Unavailable
from graphwright.tools.mcp_client import ConnectionLost, McpConnection, ServerStartError, connection
from graphwright.tools.mcp_config import ServerConfig, parse_mcp_servers
from graphwright.tools.mcp_schema import McpArguments, args_model
from graphwright.tools.spec import Risk, ToolContext, ToolSpec, Trust

META_KEY = "idempotency_key"  # the _meta entry a server may dedupe writes on


class McpTimeout(ToolFailure):
    """A read the server did not answer in time (a write's timeout is an unknown outcome)."""

    kind = "timeout"
    retryable = True


class LostMidWrite(ToolFailure):
    """The server went away during a write: whether it took effect is unknown."""

    kind = "outcome_unknown"


def classify(annotations: mcp_types.ToolAnnotations | None) -> tuple[Risk, Trust, bool]:
    """(risk, trust, idempotent) from MCP annotations; missing hints take the cautious side."""
    hints = annotations or mcp_types.ToolAnnotations()
    risk: Risk = "read" if hints.read_only_hint is True else "write"
    trust: Trust = "trusted" if hints.open_world_hint is False else "untrusted"
    idempotent = risk == "write" and hints.idempotent_hint is True
    return risk, trust, idempotent


def tool_specs(servers: Mapping[str, ServerConfig]) -> list[ToolSpec]:
    """Start (or reuse) each server and return the specs of the tools its allowlist names.

    Raises:
        ServerStartError: a server did not start; the message names it and its command.
        ConfigurationError: the allowlist names a tool the server does not have.
    """
    specs: list[ToolSpec] = []
    for name, config in servers.items():
        conn = connection(name, config)
        listed = {tool.name: tool for tool in conn.list_tools()}
        missing = [t for t in config.tools if t.removeprefix(f"{name}.") not in {*listed, "*"}]
        if missing:
            raise ServerStartError(
                f"{conn.describe()} has no tool {', '.join(map(repr, missing))}; "
                f"it offers: {', '.join(sorted(listed))}"
            )
        specs += [to_spec(conn, tool) for tool in listed.values() if config.allows(name, tool.name)]
    return specs


def tool_specs_from_mapping(raw: Mapping[str, Any]) -> list[ToolSpec]:
    """The same from a raw `mcpServers` mapping, e.g. the one in `langgraph.json`."""
    return tool_specs(parse_mcp_servers(raw))


def to_spec(conn: McpConnection, tool: mcp_types.Tool) -> ToolSpec:
    """An MCP server's tool as graphwright's: risk and trust from its annotations or the config."""
    server, config = conn.name, conn.config
    risk, trust, idempotent = classify(tool.annotations)
    override = config.override(server, tool.name)
    risk = override.risk or risk
    trust = override.trust or trust
    idempotent = risk == "write" and (
        idempotent if override.idempotent is None else override.idempotent
    )
    timeout_s = override.timeout_s or config.timeout_s
    max_chars = override.max_result_chars or config.max_result_chars
    name = f"{server}.{tool.name}"
    description = (tool.description or tool.name).strip()
    return ToolSpec(
        name=name,
        description=f"{description}\n(from MCP server {server})",
        args_model=args_model(name, tool.input_schema),
        func=_caller(conn, tool.name, risk, timeout_s, max_chars),
        risk=risk,
        trust=trust,
        timeout_s=timeout_s,
        max_result_chars=max_chars,
        retry_reads=1 if risk == "read" else 0,  # a read after a restart is safe to repeat
        keyed=idempotent,  # after an unknown outcome it runs again under its key, unasked
        server=server,
        json_schema=tool.input_schema,
    )


def _caller(conn: McpConnection, tool: str, risk: Risk, timeout_s: float, max_chars: int) -> Any:
    """The tool's function.

    A coroutine, so the call waits on the run loop (where the connection lives) and holds no pool
    thread; the executor's timeout cancels it.
    """

    async def call(args: McpArguments, ctx: ToolContext) -> Any:
        meta = {META_KEY: ctx.idempotency_key} if ctx.idempotency_key else None
        try:
            # A second past the executor's own timeout, which then speaks first.
            result = await conn.acall(
                tool,
                args.to_call(),
                meta=meta,
                timeout_s=timeout_s + 1,
                check_first=risk == "write",
            )
        except ConnectionLost as exc:
            if risk == "write":  # never retried blindly: a reviewer decides
                raise LostMidWrite(f"{exc} during the call") from exc
            raise Unavailable(str(exc)) from exc  # retryable: the read runs again, restarted
        except ServerStartError as exc:
            raise Unavailable(str(exc)) from exc
        except TimeoutError as exc:
            if risk == "write":
                raise LostMidWrite(f"{conn.describe()} did not answer {tool} in time") from exc
            raise McpTimeout(f"{conn.describe()} did not answer {tool} in time") from exc
        except MCPError as exc:
            if risk == "write" and exc.error.code == mcp_types.REQUEST_TIMEOUT:
                raise LostMidWrite(f"{conn.describe()} did not answer {tool} in time") from exc
            raise _protocol_failure(conn, tool, exc) from exc
        return _result(conn, tool, result, max_chars)

    return call


def _protocol_failure(conn: McpConnection, tool: str, exc: MCPError) -> ToolFailure:
    message = f"{conn.describe()} refused {tool}: {exc.error.message}"
    if exc.error.code == mcp_types.INVALID_PARAMS:
        return InvalidInput(message)
    if exc.error.code == mcp_types.REQUEST_TIMEOUT:
        return McpTimeout(message)
    return ToolFailure(message)


def _result(
    conn: McpConnection, tool: str, result: mcp_types.CallToolResult, max_chars: int
) -> Any:
    """The model-facing result.

    The text blocks (what the server wrote for models), else the structured content.
    """
    text = _text(result)
    if result.is_error:
        detail = text[:max_chars] or "the tool reported an error without a message"
        raise ToolFailure(f"{tool} on MCP server {conn.name!r} failed: {detail}")
    if not text and result.structured_content is not None:
        return result.structured_content
    return text


def _text(result: mcp_types.CallToolResult) -> str:
    parts = []
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            parts.append(block.text)
        else:
            parts.append(json.dumps({"type": block.type, "omitted": "non-text content"}))
    return "\n".join(parts)
