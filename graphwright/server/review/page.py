"""The HTML of the review pages: the conversation, the pending calls' form, the path and trace.

Every value is escaped, and ids travel only in `data-` attributes read by the page's
script file (`assets/review.js`); no page carries inline script.
"""

from __future__ import annotations

import html
import json
from typing import Any
from urllib.parse import quote

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from graphwright.nodes.gate_models import PendingCall
from graphwright.results import CheckpointInfo

SHOWN_CHARS = 400  # longer texts are cut here, the rest behind "more"

STYLE = """body{font-family:system-ui,sans-serif;margin:2rem;max-width:72rem;color:#111}
table{border-collapse:collapse;margin:1rem 0}td,th{border:1px solid #ccc;padding:.3rem .5rem;
vertical-align:top;text-align:left}pre{margin:0;white-space:pre-wrap;word-break:break-word}
.msg{border-left:4px solid #ccc;padding:.4rem .8rem;margin:.5rem 0;background:#fafafa}
.msg.human{border-color:#2563eb}.msg.ai{border-color:#059669}.msg.tool{border-color:#a16207}
.role{font-weight:600;font-size:.85rem;text-transform:uppercase;color:#555}
.call{border:2px solid #b91c1c;padding:.8rem 1rem;margin:1rem 0;border-radius:.3rem}
.call legend{font-weight:600;padding:0 .3rem}.choices label{margin-right:1rem}
textarea{width:100%;font-family:monospace}input.reason{width:60%}
#answer{background:#ecfdf5;padding:1rem}#status{color:#b91c1c;font-weight:600}
button{font-size:1rem;padding:.4rem 1rem}details{display:inline}
summary{cursor:pointer;color:#2563eb}"""


def page(title: str, body: str, *, scripts: bool = False) -> str:
    """A review page around `body`, with the review scripts where it has forms."""
    tags = (
        (
            '<script src="/review/assets/mermaid.min.js"></script>'
            '<script src="/review/assets/review.js"></script>'
        )
        if scripts
        else ""
    )
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>{html.escape(title)} · graphwright review</title><style>{STYLE}</style></head>
<body>{body}{tags}</body></html>"""


def e(value: Any) -> str:
    """HTML-escape any value, quotes too."""
    return html.escape(str(value), quote=True)


def thread_link(thread_id: str) -> str:
    """A link to a thread's review page."""
    return f'<a href="/review/{e(quote(thread_id, safe=""))}">{e(thread_id)}</a>'


def clipped(text: str) -> str:
    """Escaped text, cut at SHOWN_CHARS with the rest behind a "more" toggle."""
    if len(text) <= SHOWN_CHARS:
        return f"<pre>{e(text)}</pre>"
    return (
        f"<pre>{e(text[:SHOWN_CHARS])}…<details><summary>more</summary>"
        f"{e(text[SHOWN_CHARS:])}</details></pre>"
    )


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


def conversation(messages: list[Any]) -> str:
    """User messages, assistant text and tool calls, and tool results, oldest first."""
    out = []
    for m in messages:
        if not isinstance(m, BaseMessage):
            continue
        role = {"human": "user", "ai": "assistant", "tool": "tool result", "system": "system"}
        text = m.text if isinstance(m.content, list) else str(m.content)
        parts = [
            f'<div class="role">{e(role.get(m.type, m.type))}'
            + (f" · {e(m.name)}" if isinstance(m, ToolMessage) and m.name else "")
            + "</div>"
        ]
        if text:
            parts.append(clipped(text))
        if isinstance(m, AIMessage):
            parts += [
                f"<div>calls <b>{e(c['name'])}</b></div>{clipped(_json(c['args']))}"
                for c in m.tool_calls
            ]
        out.append(f'<div class="msg {e(m.type)}">{"".join(parts)}</div>')
    return "".join(out) or "<p>No messages yet.</p>"


def pending_form(thread_id: str, graph: str, calls: list[PendingCall]) -> str:
    """One form answering every pending call; the script posts all decisions at once."""
    fieldsets = []
    for i, c in enumerate(calls):
        choices = "".join(
            f'<label><input type="radio" name="decision-{i}" value="{e(d)}"> {e(d)}</label>'
            for d in c.allowed_decisions
            if d in ("approve", "edit", "reject")
        )
        about = c.description or c.reason
        where = (f", MCP server {e(c.server)}" if c.server else "") + (
            f", worker {e(c.worker)}" if c.worker else ""
        )
        edit = (
            f'<p><textarea class="edit-args" rows="5" aria-label="edited arguments">'
            f"{e(_json(c.args))}</textarea></p>"
            if "edit" in c.allowed_decisions
            else ""
        )
        call = f'class="call" data-call="{e(c.id)}" data-digest="{e(c.digest)}"'
        fieldsets.append(f"""<fieldset {call}>
<legend>{i + 1}. {e(c.tool)} <small>({e(c.risk)}{where}) · call {e(c.id)}</small></legend>
{f'<p class="description">{e(about)}</p>' if about else ""}
<pre class="args">{e(_json(c.args))}</pre>
<p class="choices">{choices}</p>
{edit}
<p><input class="reason" placeholder="reason, if you reject" aria-label="reason"></p>
</fieldset>""")
    return (
        f'<form id="decide" data-thread="{e(thread_id)}" data-graph="{e(graph)}">'
        f'{"".join(fieldsets)}<button type="submit" id="submit">Send '
        f"{'these decisions' if len(calls) > 1 else 'this decision'}</button></form>"
    )


def generic_form(thread_id: str, interrupts: list[tuple[str, Any]]) -> str:
    """Any other interrupt: its value, and a JSON answer for each."""
    blocks = "".join(
        f'<fieldset class="interrupt" data-interrupt="{e(iid)}">'
        f"<legend>interrupt {e(iid)}</legend>\n"
        f"{clipped(_json(value))}"
        '<p><textarea class="resume" rows="4" aria-label="answer as JSON">null</textarea></p>\n'
        "</fieldset>"
        for iid, value in interrupts
    )
    return (
        f'<form id="generic" data-thread="{e(thread_id)}">{blocks}'
        '<button type="submit">Send the answer</button></form>'
    )


def steps(history: list[CheckpointInfo]) -> str:
    """The nodes the run went through, numbered, oldest first."""
    items = [
        f"<li>{e(', '.join(h.node))}</li>"
        for h in reversed(history)
        if h.node and h.node != ["__start__"]
    ]
    return f'<ol id="steps">{"".join(items)}</ol>' if items else "<p>No step has run yet.</p>"


TRACE_KEYS = (
    "graph",
    "resumed",
    "tool",
    "args",
    "ok",
    "error",
    "stop_reason",
    "decisions",
    "model",
    "tool_calls",
)


def _detail(event: dict[str, Any]) -> str:
    shown = {k: event[k] for k in TRACE_KEYS if event.get(k) not in (None, [], {})}
    return clipped(json.dumps(shown, ensure_ascii=False, default=str))


def trace(events: list[dict[str, Any]]) -> str:
    """A thread's trace as a table: each event's kind, step and the keys worth reading."""
    rows = "".join(
        f"<tr><td>{e(ev['kind'])}</td><td>{e(ev.get('step', ''))}</td><td>{_detail(ev)}</td></tr>"
        for ev in events
    )
    return f"<table><tr><th>event</th><th>step</th><th>detail</th></tr>{rows}</table>"
