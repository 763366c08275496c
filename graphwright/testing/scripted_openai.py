"""A local OpenAI-compatible server that replays a scripted conversation.

Tests (graphwright's and a user's) drive the real ``ChatOpenAI`` client over real HTTP
against it (``chat_model()``). Each POST to ``/v1/chat/completions`` takes the next scripted reply and records the request; a
request beyond the script gets HTTP 500 and is remembered as unexpected, and
``assert_done()`` fails a test that left replies unused.

Like the real API, it checks every request against OpenAI's message rules (see
``graphwright.testing.openai_rules``) and answers HTTP 400 to a violation. It streams when asked
(``"stream": true``): server-sent chunks, the text split into ``Reply.chunks``
pieces, tool-call arguments in pieces, and a last usage chunk when
``stream_options.include_usage`` is set. ``response_format`` of type
``json_schema`` is served from the same script (the scripted content is the JSON),
or refused with 400 when ``json_schema=False`` to exercise a client's fallback.
``latency_s`` holds every answer back that long, as a model's time to first token.
``/v1/embeddings`` answers with deterministic vectors (``scripted_embeddings``), outside the
script, each request kept in ``embedding_requests``.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from graphwright.testing.openai_rules import violation
from graphwright.testing.scripted_embeddings import embeddings_answer
from graphwright.testing.until import scaled


@dataclass
class Reply:
    """One scripted assistant turn: text, tool calls, or both."""

    content: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    prompt_tokens: int = 50
    completion_tokens: int = 10
    chunks: int = 3  # pieces the text is streamed in
    parts: list[str] | None = None  # or exactly these pieces (their join is the content)
    # Streaming only: after the first text piece, wait for this event (a test reading
    # the partial output releases it).
    hold: threading.Event | None = None

    def tool_call_json(self) -> list[dict[str, Any]]:
        return [
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

    def usage(self) -> dict[str, int]:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "total_tokens": self.prompt_tokens + self.completion_tokens}

    def to_json(self, model: str) -> dict[str, Any]:
        calls = self.tool_call_json()
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
            "usage": self.usage(),
        }

    def stream_json(self, model: str, include_usage: bool) -> Iterator[dict[str, Any]]:
        """The reply as ``chat.completion.chunk`` objects, in the order the API sends them."""
        base = {"id": f"chatcmpl-{uuid.uuid4().hex[:12]}", "object": "chat.completion.chunk",
                "created": 0, "model": model}

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        yield chunk({"role": "assistant", "content": ""})
        for i, piece in enumerate(self.parts or pieces(self.content or "", self.chunks)):
            yield chunk({"content": piece})
            if i == 0 and self.hold is not None:
                self.hold.wait(timeout=scaled(30))
        for index, c in enumerate(self.tool_call_json()):
            args = c["function"]["arguments"]
            yield chunk({"tool_calls": [{"index": index, "id": c["id"], "type": "function",
                                         "function": {"name": c["function"]["name"], "arguments": ""}}]})
            for piece in pieces(args, 2):
                yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
        yield chunk({}, "tool_calls" if self.tool_calls else "stop")
        if include_usage:
            yield {**base, "choices": [], "usage": self.usage()}


def pieces(text: str, n: int) -> list[str]:
    """``text`` cut into at most ``n`` non-empty pieces."""
    if not text:
        return []
    size = max(1, -(-len(text) // max(n, 1)))
    return [text[i:i + size] for i in range(0, len(text), size)]


def call(name: str, args: dict[str, Any] | str, id: str | None = None) -> dict[str, Any]:
    return {"name": name, "args": args, "id": id}


class ScriptedOpenAI:
    """Serve ``script`` in order on a free loopback port."""

    def __init__(self, *, json_schema: bool = True, latency_s: float = 0.0) -> None:
        self.script: list[Reply] = []
        self.json_schema = json_schema  # False: refuse response_format json_schema with 400
        self.latency_s = latency_s  # before each answer, outside the lock (requests overlap)
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
        self.rejected: list[tuple[str, dict[str, Any]]] = []  # (why, body) answered with 400
        self.served: list[Reply] = []  # every reply sent, in order (their usage adds up)
        self.embedding_requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # http.server's method naming
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                status, payload = server._answer(self.path, body)
                if server.latency_s:
                    time.sleep(server.latency_s)
                if isinstance(payload, Reply):
                    self._stream(payload, body)
                    return
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, reply: Reply, body: dict[str, Any]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                usage = bool((body.get("stream_options") or {}).get("include_usage"))
                for item in reply.stream_json(body.get("model", "scripted"), usage):
                    self.wfile.write(f"data: {json.dumps(item, ensure_ascii=False)}\n\n".encode())
                    self.wfile.flush()
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

            def log_message(self, *args: Any) -> None:
                pass

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._http.daemon_threads = True
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._http.server_address[1]}/v1"

    def chat_model(self) -> ChatOpenAI:
        """A real ``ChatOpenAI`` client talking to this server, without retries."""
        return ChatOpenAI(model="scripted", base_url=self.base_url, api_key=SecretStr("test-key"),
                          max_retries=0, timeout=scaled(10), stream_usage=True)

    def __enter__(self) -> ScriptedOpenAI:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def load(self, *replies: Reply) -> None:
        self.script.extend(replies)

    def load_for(self, marker: str, *replies: Reply) -> None:
        self.lanes.setdefault(marker, []).extend(replies)
        self.lane_requests.setdefault(marker, [])

    def respond(self, marker: str, responder: Callable[[dict[str, Any]], Reply]) -> None:
        self.responders.append((marker, responder))

    def usage_total(self) -> int:
        """The sum of the ``usage.total_tokens`` of every reply served."""
        return sum(r.prompt_tokens + r.completion_tokens for r in self.served)

    def _answer(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any] | Reply]:
        with self._lock:
            if path.endswith("/embeddings"):
                self.embedding_requests.append(body)
                return embeddings_answer(body)
            problem = violation(body)
            if problem is None and not self.json_schema and \
                    (body.get("response_format") or {}).get("type") == "json_schema":
                problem = ("response_format", "response_format of type json_schema is not "
                                              "supported by this server")
            if problem is not None:
                self.rejected.append((problem[1], body))
                return 400, {"error": {"message": problem[1], "type": "invalid_request_error",
                                       "param": problem[0], "code": None}}
            reply = self._pick(path, body)
            if reply is None:
                self.unexpected.append(body)
                return 500, {"error": {"message": "unexpected request: the script is used up",
                                       "type": "server_error"}}
            self.served.append(reply)
            if body.get("stream"):
                return 200, reply
            return 200, reply.to_json(body.get("model", "scripted"))

    def _pick(self, path: str, body: dict[str, Any]) -> Reply | None:
        system = next((str(m.get("content")) for m in body.get("messages", [])
                       if m.get("role") in ("system", "developer")), "")
        for marker, lane in self.lanes.items():
            if marker in system:
                if not lane:
                    return None
                self.lane_requests[marker].append(body)
                return lane.pop(0)
        for marker, responder in self.responders:
            if marker in system:
                self.side_requests.append(body)
                return responder(body)
        if not path.endswith("/chat/completions") or not self.script:
            return None
        self.requests.append(body)
        return self.script.pop(0)

    def assert_done(self) -> None:
        assert not self.rejected, f"requests refused with 400: {[r for r, _ in self.rejected]}"
        assert not self.unexpected, f"{len(self.unexpected)} unexpected model request(s)"
        assert not self.script, f"{len(self.script)} scripted reply(ies) were never requested"
        unused = {m: len(r) for m, r in self.lanes.items() if r}
        assert not unused, f"scripted replies never requested, by lane: {unused}"

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()
