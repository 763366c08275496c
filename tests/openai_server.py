"""A local OpenAI-compatible server that replays a scripted conversation.

Tests drive the real ``ChatOpenAI`` client over real HTTP against it. Each POST to
``/v1/chat/completions`` takes the next scripted reply and records the request; a
request beyond the script gets HTTP 500 and is remembered as unexpected, and
``assert_done()`` fails a test that left replies unused.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted assistant turn: text, tool calls, or both."""

    content: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    prompt_tokens: int = 50
    completion_tokens: int = 10

    def to_json(self, model: str) -> dict[str, Any]:
        calls = [
            {
                "id": c.get("id") or f"call_{uuid.uuid4().hex[:8]}",
                "type": "function",
                "function": {
                    "name": c["name"],
                    # A string is sent as is, so tests can script malformed JSON.
                    "arguments": c["args"] if isinstance(c["args"], str)
                    else json.dumps(c["args"], ensure_ascii=False),
                },
            }
            for c in self.tool_calls
        ]
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if calls:
            message["tool_calls"] = calls
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": self.prompt_tokens,
                      "completion_tokens": self.completion_tokens,
                      "total_tokens": self.prompt_tokens + self.completion_tokens},
        }


def call(name: str, args: dict[str, Any] | str, id: str | None = None) -> dict[str, Any]:
    return {"name": name, "args": args, "id": id}


class ScriptedOpenAI:
    """Serve ``script`` in order on a free loopback port."""

    def __init__(self) -> None:
        self.script: list[Reply] = []
        # (marker, responder): a request whose system message contains the marker is
        # answered by the responder instead of the script (e.g. compaction summaries).
        self.responders: list[tuple[str, Callable[[dict[str, Any]], Reply]]] = []
        self.side_requests: list[dict[str, Any]] = []
        # marker -> replies for requests whose system message contains the marker, so
        # parallel workers each get their own script whatever order they ask in.
        self.lanes: dict[str, list[Reply]] = {}
        self.lane_requests: dict[str, list[dict[str, Any]]] = {}
        self.requests: list[dict[str, Any]] = []
        self.unexpected: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # http.server's method naming
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                status, payload = server._answer(self.path, body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._http.server_address[1]}/v1"

    def load(self, *replies: Reply) -> None:
        self.script.extend(replies)

    def load_for(self, marker: str, *replies: Reply) -> None:
        self.lanes.setdefault(marker, []).extend(replies)
        self.lane_requests.setdefault(marker, [])

    def respond(self, marker: str, responder: Callable[[dict[str, Any]], Reply]) -> None:
        self.responders.append((marker, responder))

    def _answer(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            system = next((str(m.get("content")) for m in body.get("messages", [])
                           if m.get("role") == "system"), "")
            for marker, lane in self.lanes.items():
                if marker in system:
                    if not lane:
                        self.unexpected.append(body)
                        return 500, {"error": {"message": f"lane {marker!r} is used up",
                                               "type": "server_error"}}
                    self.lane_requests[marker].append(body)
                    return 200, lane.pop(0).to_json(body.get("model", "scripted"))
            for marker, responder in self.responders:
                if marker in system:
                    self.side_requests.append(body)
                    return 200, responder(body).to_json(body.get("model", "scripted"))
            if not path.endswith("/chat/completions") or not self.script:
                self.unexpected.append(body)
                return 500, {"error": {"message": "unexpected request: the script is used up",
                                       "type": "server_error"}}
            self.requests.append(body)
            return 200, self.script.pop(0).to_json(body.get("model", "scripted"))

    def assert_done(self) -> None:
        assert not self.unexpected, f"{len(self.unexpected)} unexpected model request(s)"
        assert not self.script, f"{len(self.script)} scripted reply(ies) were never requested"
        unused = {m: len(r) for m, r in self.lanes.items() if r}
        assert not unused, f"scripted replies never requested, by lane: {unused}"

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()
