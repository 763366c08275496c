"""A local OpenAI-compatible server that replays a scripted conversation.

Tests (graphwright's and a user's) drive the real `ChatOpenAI` client over real HTTP
against it (`chat_model()`). Each POST to `/v1/chat/completions` takes the next scripted
reply and records the request; a request beyond the script gets HTTP 500 and is remembered
as unexpected, and `assert_done()` fails a test that left replies unused.

Like the real API, it checks every request against OpenAI's message rules (see
`graphwright.testing.openai_rules`) and answers HTTP 400 to a violation. It streams when asked
(`"stream": true`): server-sent chunks, the text split into `Reply.chunks`
pieces, tool-call arguments in pieces, and a last usage chunk when
`stream_options.include_usage` is set. `response_format` of type
`json_schema` is served from the same script (the scripted content is the JSON),
or refused with 400 when `json_schema=False` to exercise a client's fallback.
`latency_s` holds every answer back that long, as a model's time to first token.
`/v1/embeddings` answers with deterministic vectors (`scripted_embeddings`), outside the
script, each request kept in `embedding_requests`.

A script may hold a `Fault` where a reply would be: an HTTP error, a stall longer than
the client waits, or an empty stream, as real servers fail. `usage=False` serves
no usage at all (servers that report none) and `null_content=False` answers 500 to an
assistant message whose `content` is null, as llama.cpp's server does.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from graphwright.testing.openai_rules import violation
from graphwright.testing.quiet_http import QuietHTTPServer
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
                    "arguments": c["args"]
                    if isinstance(c["args"], str)
                    else json.dumps(c["args"], ensure_ascii=False),
                },
            }
            for c in self.tool_calls
        ]

    def usage(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
        }

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
            "choices": [
                {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
            ],
            "usage": self.usage(),
        }

    def stream_json(self, model: str, include_usage: bool) -> Iterator[dict[str, Any]]:
        """The reply as `chat.completion.chunk` objects, in the order the API sends them."""
        base = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
        }

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        yield chunk({"role": "assistant", "content": ""})
        for i, piece in enumerate(self.parts or pieces(self.content or "", self.chunks)):
            yield chunk({"content": piece})
            if i == 0 and self.hold is not None:
                self.hold.wait(timeout=scaled(30))
        for index, c in enumerate(self.tool_call_json()):
            args = c["function"]["arguments"]
            yield chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": c["id"],
                            "type": "function",
                            "function": {"name": c["function"]["name"], "arguments": ""},
                        }
                    ]
                }
            )
            for piece in pieces(args, 2):
                yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
        yield chunk({}, "tool_calls" if self.tool_calls else "stop")
        if include_usage:
            yield {**base, "choices": [], "usage": self.usage()}


@dataclass
class Fault:
    """A failure served where the next reply would be: what real model servers do."""

    status: int = 500  # the HTTP status of the error answer
    message: str = "the server had an error while processing your request"
    stall_s: float = 0.0  # hold the answer back this long first (a shorter client timeout fires)
    empty: bool = False  # answer 200 with no choices: an empty stream, or an empty body

    def error_json(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": "server_error", "code": None}}


def pieces(text: str, n: int) -> list[str]:
    """`text` cut into at most `n` non-empty pieces."""
    if not text:
        return []
    size = max(1, -(-len(text) // max(n, 1)))
    return [text[i : i + size] for i in range(0, len(text), size)]


def empty_json(body: dict[str, Any]) -> dict[str, Any]:
    """A completion with no choices at all: what a broken server sends as a 200."""
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "scripted"),
        "choices": [],
    }


def null_content(body: dict[str, Any]) -> tuple[str, str] | None:
    """An assistant message whose content is null: refused by llama.cpp's server."""
    for i, m in enumerate(body.get("messages") or []):
        if m.get("role") == "assistant" and "content" in m and m["content"] is None:
            return f"messages.[{i}].content", "Expected 'content' to be a string or an array"
    return None


def call(name: str, args: dict[str, Any] | str, id: str | None = None) -> dict[str, Any]:
    """A tool call for a scripted reply; its id is made up when not given."""
    return {"name": name, "args": args, "id": id}


class ScriptedOpenAI:
    """Serve `script` in order on a free loopback port."""

    def __init__(
        self,
        *,
        json_schema: bool = True,
        latency_s: float = 0.0,
        usage: bool = True,
        null_content: bool = True,
    ) -> None:
        self.script: list[Reply | Fault] = []
        self.json_schema = json_schema  # False: refuse response_format json_schema with 400
        self.latency_s = latency_s  # before each answer, outside the lock (requests overlap)
        self.usage = usage  # False: no usage in any answer, asked for or not
        self.null_content = null_content  # False: 500 to an assistant message with null content
        self.faults: list[Fault] = []  # every fault served, in order
        self._closed = threading.Event()  # ends a stall when the server closes
        # (marker, responder): a request whose system message contains the marker is
        # answered by the responder instead of the script (e.g. compaction summaries).
        self.responders: list[tuple[str, Callable[[dict[str, Any]], Reply]]] = []
        self.side_requests: list[dict[str, Any]] = []
        # marker -> replies for requests whose system message contains the marker, so
        # parallel workers each get their own script whatever order they ask in.
        self.lanes: dict[str, list[Reply | Fault]] = {}
        self.lane_requests: dict[str, list[dict[str, Any]]] = {}
        self.requests: list[dict[str, Any]] = []
        self.unexpected: list[dict[str, Any]] = []
        self.rejected: list[tuple[str, dict[str, Any]]] = []  # (why, body) answered with 400
        self.served: list[Reply] = []  # every reply sent, in order (their usage adds up)
        self.embedding_requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        handler = type("Handler", (_Handler,), {"scripted": self})
        self._http = QuietHTTPServer(("127.0.0.1", 0), handler)
        self._http.daemon_threads = True
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._http.server_address[1]}/v1"

    def chat_model(self) -> ChatOpenAI:
        """A real `ChatOpenAI` client talking to this server, without retries."""
        return ChatOpenAI(
            model="scripted",
            base_url=self.base_url,
            api_key=SecretStr("test-key"),
            max_retries=0,
            timeout=scaled(10),
            stream_usage=True,
        )

    def __enter__(self) -> ScriptedOpenAI:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def load(self, *replies: Reply | Fault) -> None:
        self.script.extend(replies)

    def load_for(self, marker: str, *replies: Reply | Fault) -> None:
        self.lanes.setdefault(marker, []).extend(replies)
        self.lane_requests.setdefault(marker, [])

    def respond(self, marker: str, responder: Callable[[dict[str, Any]], Reply]) -> None:
        self.responders.append((marker, responder))

    def usage_total(self) -> int:
        """The sum of the `usage.total_tokens` of every reply served."""
        return sum(r.prompt_tokens + r.completion_tokens for r in self.served)

    def _answer(
        self, path: str, body: dict[str, Any]
    ) -> tuple[int, dict[str, Any] | Reply | Fault]:
        with self._lock:
            if path.endswith("/embeddings"):
                self.embedding_requests.append(body)
                return embeddings_answer(body)
            problem = violation(body)
            if problem is None and not self.null_content:
                problem = null_content(body)
                if problem is not None:  # llama.cpp's server answers this with a 500
                    self.rejected.append((problem[1], body))
                    return 500, api_error(problem[1], "server_error")
            if (
                problem is None
                and not self.json_schema
                and (body.get("response_format") or {}).get("type") == "json_schema"
            ):
                problem = (
                    "response_format",
                    "response_format of type json_schema is not supported by this server",
                )
            if problem is not None:
                self.rejected.append((problem[1], body))
                kind, param = "invalid_request_error", problem[0]
                return 400, api_error(problem[1], kind, param=param, code=None)
            reply = self._pick(path, body)
            if reply is None:
                self.unexpected.append(body)
                return 500, api_error("unexpected request: the script is used up", "server_error")
            if isinstance(reply, Fault):
                self.faults.append(reply)
                return reply.status, reply
            self.served.append(reply)
            if body.get("stream"):
                return 200, reply
            answer = reply.to_json(body.get("model", "scripted"))
            if not self.usage:
                del answer["usage"]
            return 200, answer

    def _pick(self, path: str, body: dict[str, Any]) -> Reply | Fault | None:
        system = next(
            (
                str(m.get("content"))
                for m in body.get("messages", [])
                if m.get("role") in ("system", "developer")
            ),
            "",
        )
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
        self._closed.set()
        self._http.shutdown()
        self._http.server_close()


def api_error(message: str, kind: str, **extra: Any) -> dict[str, Any]:
    """An error body as OpenAI's API sends it."""
    return {"error": {"message": message, "type": kind, **extra}}


class _Handler(BaseHTTPRequestHandler):
    """A request to the scripted server (`scripted`, set on the subclass each server makes)."""

    scripted: ScriptedOpenAI

    def do_POST(self) -> None:  # http.server's method naming
        body = self._body()
        if body is None:
            return
        status, payload = self.scripted._answer(self.path, body)
        if self.scripted.latency_s:
            time.sleep(self.scripted.latency_s)
        if isinstance(payload, Fault):
            faulted = self._fault(body, payload)
            if faulted is None:
                return
            status, payload = faulted
        if isinstance(payload, Reply):
            usage = self.scripted.usage and bool(
                (body.get("stream_options") or {}).get("include_usage")
            )
            self._sse(payload.stream_json(body.get("model", "scripted"), usage))
            return
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> dict[str, Any] | None:
        """The request's JSON; None when its client went away mid-body (a killed run)."""
        raw = self.rfile.read(int(self.headers["Content-Length"]))
        try:
            body: dict[str, Any] = json.loads(raw)
        except ValueError:
            self.close_connection = True
            return None
        return body

    def _fault(self, body: dict[str, Any], fault: Fault) -> tuple[int, Any] | None:
        """The status and JSON a fault answers with; None when it was answered here."""
        if fault.stall_s and self.scripted._closed.wait(fault.stall_s):
            return None
        if fault.empty and body.get("stream"):
            self._sse([])
            return None
        return (200, empty_json(body)) if fault.empty else (fault.status, fault.error_json())

    def _sse(self, chunks: Iterable[dict[str, Any]]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for item in chunks:
            self.wfile.write(f"data: {json.dumps(item, ensure_ascii=False)}\n\n".encode())
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True

    def log_message(self, *args: Any) -> None:
        pass
