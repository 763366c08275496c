"""The campaign's model: an OpenAI-compatible server that decides from the conversation alone.

Asked with no tool result yet, it proposes `lookup_room`; after one, `book`; after
two, it answers. Every proposal carries a fresh tool-call id, as a real model's would,
so a step that is planned twice proposes "the same" call under a new id.
"""

from __future__ import annotations

import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler
from typing import Any

from graphwright.testing.quiet_http import QuietHTTPServer

CALLS = [
    ("lookup_room", {"room": "Aurora"}),
    ("book", {"room": "Aurora", "slot": "2026-12-01T10:00"}),
]


def reply(body: dict[str, Any]) -> dict[str, Any]:
    messages = body.get("messages") or []
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    results = sum(1 for m in messages[last_user + 1 :] if m.get("role") == "tool")
    message: dict[str, Any] = {"role": "assistant", "content": None}
    if results < len(CALLS):
        name, args = CALLS[results]
        message["tool_calls"] = [
            {
                "id": f"call_{uuid.uuid4().hex[:12]}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
        ]
    else:
        message["content"] = "Booked the Aurora room for 2026-12-01 10:00."
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:8]}",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "scripted"),
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if "tool_calls" in message else "stop",
            }
        ],
        "usage": {"prompt_tokens": 40, "completion_tokens": 8, "total_tokens": 48},
    }


def chunks(completion: dict[str, Any]) -> list[dict[str, Any]]:
    """The completion as the chunks of a streamed reply: one delta, then the finish and usage."""
    choice = completion["choices"][0]
    delta = dict(choice["message"])
    if "tool_calls" in delta:
        delta["tool_calls"] = [{**call, "index": i} for i, call in enumerate(delta["tool_calls"])]
    base = {k: completion[k] for k in ("id", "created", "model")} | {
        "object": "chat.completion.chunk"
    }
    return [
        base | {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        base | {"choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]},
        base | {"choices": [], "usage": completion["usage"]},
    ]


class ChaosModel:
    """Serve `reply` on a free loopback port until closed."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # http.server's method naming
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                completion = reply(body)
                if body.get("stream"):  # token streaming asks for server-sent events
                    data = b"".join(
                        f"data: {json.dumps(c)}\n\n".encode() for c in chunks(completion)
                    )
                    data += b"data: [DONE]\n\n"
                    kind = "text/event-stream"
                else:
                    data, kind = json.dumps(completion).encode(), "application/json"
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._http = QuietHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._http.server_address[1]}/v1"

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()
