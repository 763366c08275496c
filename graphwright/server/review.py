"""``/review``: server-rendered pages where a reviewer sees the graph, the path, the trace and
the pending calls, and answers them with buttons that call the same runs API."""

from __future__ import annotations

import html
import json
from typing import Any

from fastapi import FastAPI, Request
from fastapi.params import Depends
from fastapi.responses import HTMLResponse, Response

from graphwright.drawing import mermaid_library
from graphwright.orchestrator import Orchestrator

STYLE = """body{font-family:system-ui,sans-serif;margin:2rem;max-width:70rem}
table{border-collapse:collapse;margin:1rem 0}td,th{border:1px solid #ccc;padding:.3rem .5rem;
vertical-align:top;text-align:left}pre{margin:0;white-space:pre-wrap}.call{border:1px solid #b91c1c;
padding:1rem;margin:1rem 0}button{margin-right:.5rem}#answer{background:#ecfdf5;padding:1rem}"""

SCRIPT = """
async function decide(callId, action) {
  const decision = {action: action, digest: DIGESTS[callId]};
  if (action === "edit") decision.args = JSON.parse(document.getElementById("args-" + callId).value);
  if (action === "reject") decision.reason = document.getElementById("reason-" + callId).value || "rejected in review";
  const headers = {"content-type": "application/json"};
  if (API_KEY) headers["x-api-key"] = API_KEY;
  const res = await fetch("/threads/" + encodeURIComponent(THREAD) + "/runs/wait", {method: "POST",
    headers: headers, body: JSON.stringify({assistant_id: GRAPH, command: {resume: {[callId]: decision}}})});
  const status = document.getElementById("status");
  if (!res.ok) { status.textContent = "refused: " + (await res.text()); return; }
  location.reload();
}
"""


def _js(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False).replace("</", "<\\/")


def _page(title: str, body: str, head: str = "") -> HTMLResponse:
    return HTMLResponse(f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>{html.escape(title)} · graphwright review</title><style>{STYLE}</style>{head}</head>
<body>{body}</body></html>""")


def mount(app: FastAPI, orch: Orchestrator, guarded: list[Depends]) -> None:
    @app.get("/review", response_class=HTMLResponse, dependencies=guarded)
    def waiting(request: Request) -> HTMLResponse:
        key = request.query_params.get("api_key")
        suffix = f"?api_key={html.escape(key)}" if key else ""
        rows = "".join(
            f'<tr><td><a href="/review/{html.escape(t.thread_id)}{suffix}">{html.escape(t.thread_id)}</a>'
            f"</td><td>{html.escape(t.graph or '')}</td></tr>"
            for t in orch.threads() if t.status == "interrupted"
        )
        table = f"<table><tr><th>thread</th><th>graph</th></tr>{rows}</table>" if rows else \
            "<p>No thread is waiting at a gate.</p>"
        return _page("waiting", f"<h1>Threads waiting for a decision</h1>{table}")

    @app.get("/review/assets/mermaid.min.js", dependencies=guarded)
    def mermaid_js() -> Response:
        return Response(mermaid_library(), media_type="text/javascript")

    @app.get("/review/{thread_id}", response_class=HTMLResponse, dependencies=guarded)
    def thread_page(thread_id: str, request: Request) -> HTMLResponse:
        state = orch.state(thread_id)
        graph = state.graph or ""
        key = request.headers.get("x-api-key") or request.query_params.get("api_key") or ""
        drawing = orch.draw(graph, "mermaid", thread_id)
        pending = state.pending.calls if state.pending else []
        calls = "".join(
            f"""<div class="call" data-call="{html.escape(c.id)}"><h3>{html.escape(c.tool)}
<small>({html.escape(c.risk)}{', MCP server ' + html.escape(c.server) if c.server else ''}{', worker ' + html.escape(c.worker) if c.worker else ''})</small></h3>
<p>{html.escape(c.reason)}</p><pre class="args">{html.escape(json.dumps(c.args, ensure_ascii=False, indent=2))}</pre>
<p><button id="approve-{html.escape(c.id)}" onclick='decide({_js(c.id)}, "approve")'>Approve</button>
<button onclick='decide({_js(c.id)}, "reject")'>Reject</button>
<input id="reason-{html.escape(c.id)}" placeholder="reason for rejecting"></p>
<p><textarea id="args-{html.escape(c.id)}" rows="6" cols="70">{html.escape(json.dumps(c.args, ensure_ascii=False, indent=2))}</textarea><br>
<button onclick='decide({_js(c.id)}, "edit")'>Edit and approve</button></p></div>"""
            for c in pending
        )
        answer = state.values.get("answer")
        trace_rows = "".join(
            f"<tr><td>{html.escape(e['kind'])}</td><td>{html.escape(str(e.get('step', '')))}</td>"
            f"<td><pre>{html.escape(json.dumps({k: v for k, v in e.items() if k in ('tool', 'args', 'ok', 'error', 'stop_reason', 'decisions', 'model')}, ensure_ascii=False))}</pre></td></tr>"
            for e in orch.trace(thread_id)
        )
        src = "/review/assets/mermaid.min.js" + (f"?api_key={html.escape(key)}" if key else "")
        body = f"""<h1>Thread {html.escape(thread_id)}</h1>
<p>graph <b>{html.escape(graph)}</b> · status <b id="thread-status">{html.escape(str(state.status))}</b></p>
<p id="status"></p>
{f'<div id="answer"><h2>Answer</h2><p>{html.escape(answer)}</p></div>' if answer else ''}
{f'<h2>Pending calls</h2>{calls}' if calls else ''}
<h2>Graph</h2><pre class="mermaid">{html.escape(drawing)}</pre>
<h2>Trace</h2><table><tr><th>event</th><th>step</th><th>detail</th></tr>{trace_rows}</table>
<script src="{src}"></script>
<script>const THREAD = {_js(thread_id)}, GRAPH = {_js(graph)}, API_KEY = {_js(key)};
const DIGESTS = {_js({c.id: c.digest for c in pending})};{SCRIPT}
mermaid.initialize({{startOnLoad: true, securityLevel: "strict"}});</script>"""
        return _page(thread_id, body)
