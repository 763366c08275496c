"""`/mcp`.

Every assistant an MCP tool over Streamable HTTP (JSON answers, no session), as the reference serves
it. Each call goes through this same app with the caller's own headers (`/assistants/search`,
`/assistants/{id}/schemas`, `/runs/wait`), so an MCP caller is authenticated and authorized like any
other, and its runs are ordinary runs.
"""

from __future__ import annotations

import asyncio
import json
import time
from importlib.metadata import version
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from graphwright.server.extras import mcp_tools
from graphwright.server.extras.mcp_tools import INVALID_PARAMS, METHOD_NOT_FOUND, PAGE, error
from graphwright.server.http._inner_calls import Inner, segment
from graphwright.server.http.deps import Guarded

router = APIRouter(tags=["mcp"])
MAX_ASSISTANTS = 1000  # searched for a tool's assistant, as the reference's
WAKE_MS = 5000  # a wait for a reviewer looks at the thread's runs at least this often


def bad_request(message: str) -> Response:
    return JSONResponse({"error": message}, status_code=400)


async def tools_list(inner: Inner, params: dict[str, Any]) -> dict[str, Any]:
    try:
        cursor = int(params.get("cursor", 0))
    except (TypeError, ValueError):
        cursor = 0
    found = await inner.json("POST", "/assistants/search", {"offset": cursor, "limit": PAGE})
    unique: dict[str, dict[str, Any]] = {}
    for assistant in found:  # one tool per name: the first assistant that has it
        unique.setdefault(mcp_tools.tool_name(assistant["name"]), assistant)

    async def described(name: str, assistant: dict[str, Any]) -> dict[str, Any] | None:
        answer = await inner.call(
            "GET", f"/assistants/{segment(assistant['assistant_id'])}/schemas"
        )
        schema = answer.json().get("input_schema") if answer.is_success else None
        if schema is None:  # no schema to offer (as the reference, the tool is left out)
            return None
        return mcp_tools.tool(assistant, name, schema)

    tools = await asyncio.gather(*(described(n, a) for n, a in unique.items()))
    result: dict[str, Any] = {"tools": [t for t in tools if t is not None]}
    if len(found) == PAGE:
        result["nextCursor"] = cursor + PAGE
    return {"result": result}


async def tools_call(inner: Inner, params: dict[str, Any]) -> dict[str, Any]:
    name = params.get("name")
    if not name:
        return error(INVALID_PARAMS, f"Unknown tool: {name}")
    found = await inner.json("POST", "/assistants/search", {"limit": MAX_ASSISTANTS})
    matching = [a for a in found if mcp_tools.tool_name(a["name"]) == name]
    if not matching:
        return error(INVALID_PARAMS, f"Unknown tool: {name}")
    if len(matching) > 1:
        return error(INVALID_PARAMS, "Multiple tools found with the same name.")
    # Its thread is kept (the reference's is deleted): the run is listed, traced, and a gate
    # in it can be answered on the review page.
    body = {
        "assistant_id": matching[0]["assistant_id"],
        "input": params.get("arguments") or {},
        "context": params.get("context"),
        "on_completion": "keep",
    }
    answer = await inner.call("POST", "/runs/wait", body)
    if not answer.is_success:
        detail = answer.json().get("detail") if answer.content else answer.reason_phrase
        return {"result": {"isError": True, "content": [{"type": "text", "text": str(detail)}]}}
    value: Any = answer.json()
    location = answer.headers.get("content-location", "").split("/")
    thread_id, run_id = (
        (segment(location[2]), segment(location[4])) if len(location) == 5 else (None, None)
    )
    if thread_id and run_id and isinstance(value, dict) and value.get("__interrupt__"):
        value = await reviewed(inner, thread_id, run_id, value)
    return {"result": mcp_tools.call_result(value, thread_id)}


async def reviewed(inner: Inner, thread_id: str, run_id: str, value: Any) -> Any:
    """The output of the run a reviewer's answer starts on the thread, or the gated output.

    The answer may come through `/review` or any client; it is waited for up to `mcp_review_wait_s`,
    and the gated output is returned if none comes by then. Woken by the thread's trace, where every
    run writes its start.
    """
    settings = inner.svc.orch.settings
    deadline = time.monotonic() + settings.mcp_review_wait_s
    trace, client = inner.svc.orch.keys.events(thread_id), inner.svc.aio()
    while (left := deadline - time.monotonic()) > 0:
        newest: Any = await client.xrevrange(trace, count=1)  # before the look: no start is missed
        since = newest[0][0] if newest else "0-0"
        runs = await inner.json("GET", f"/threads/{thread_id}/runs?limit=1")
        if runs and runs[0]["run_id"] != run_id:  # the answer's run: its output, once it ends
            run_id = runs[0]["run_id"]
            value = await inner.json("GET", f"/threads/{thread_id}/runs/{run_id}/join")
            if not (isinstance(value, dict) and value.get("__interrupt__")):
                return value  # another gate after it: wait for that one's answer too
            continue
        await client.xread({trace: since}, count=1, block=int(min(left * 1000, WAKE_MS)) or 1)
    return value


async def answer_request(request: Request, message: dict[str, Any]) -> dict[str, Any]:
    method, params = message["method"], message.get("params") or {}
    if method == "initialize":
        return {
            "result": {
                "protocolVersion": mcp_tools.negotiated(params.get("protocolVersion")),
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": "graphwright", "version": version("graphwright")},
            }
        }
    if method == "ping":
        return {"result": {}}
    if method == "tools/list":
        return await tools_list(Inner(request), params)
    if method == "tools/call":
        return await tools_call(Inner(request), params)
    return error(METHOD_NOT_FOUND, f"Method not found: {method}")


@router.post("/mcp", dependencies=Guarded)
async def mcp_post(request: Request) -> Response:
    """One JSON-RPC message.

    A request gets its answer as JSON; a notification or a response (the client's) is accepted with
    202.
    """
    try:
        message = json.loads(await request.body())
    except json.JSONDecodeError:
        return bad_request("Invalid JSON")
    accept = request.headers.get("accept", "")
    if "application/json" not in accept and "text/event-stream" not in accept:
        return bad_request("Accept header must include application/json or text/event-stream")
    if not isinstance(message, dict):
        return bad_request("Invalid message format.")
    if message.get("jsonrpc") != "2.0":
        return bad_request("Invalid JSON-RPC message. Missing or invalid jsonrpc version.")
    if message.get("id") is not None and message.get("method"):
        answered = await answer_request(request, message)
        return JSONResponse({"jsonrpc": "2.0", "id": message["id"], **answered})
    if message.get("id") is not None or message.get("method"):
        return Response(status_code=202)
    return bad_request(
        "Invalid message format. A message is to be either a JSON-RPC request, "
        "response, or notification."
    )


@router.get("/mcp", dependencies=Guarded)
def mcp_get() -> Response:
    """No server-initiated stream: every answer comes with its request."""
    return Response(status_code=405)


@router.delete("/mcp", dependencies=Guarded)
def mcp_delete() -> Response:
    """No session to end: the server keeps none."""
    return Response(status_code=404)
