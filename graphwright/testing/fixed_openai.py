"""A minimal OpenAI-compatible server that always gives the same reply, streamed in chunks.

Separate from the scripted server (graphwright/testing/scripted_openai.py): this one serves
any number of clients and processes (the reference server and graphwright at once) with one
fixed reply, sent as `CHUNKS` server-sent-event chunks when the request asks to stream.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CHUNKS = 20
WORDS = [f"w{i} " for i in range(CHUNKS)]
REPLY = "".join(WORDS)


def completion(stream: bool) -> Iterator[dict[str, Any]]:
    """The fixed reply as one completion, or as its stream of chunks."""
    base = {"id": "chatcmpl-fixed", "created": 0, "model": "fixed"}
    if not stream:
        yield {
            **base,
            "object": "chat.completion",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": REPLY},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 5, "completion_tokens": CHUNKS, "total_tokens": 5 + CHUNKS},
        }
        return
    for i, word in enumerate(WORDS):
        delta = {"role": "assistant", "content": word} if i == 0 else {"content": word}
        yield {
            **base,
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
        }
    yield {
        **base,
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
    }


class Handler(BaseHTTPRequestHandler):
    """Answers every chat completion with the fixed reply."""

    def log_message(self, *_: Any) -> None:
        return

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        stream = bool(body.get("stream"))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream" if stream else "application/json")
        self.end_headers()
        if not stream:
            self.wfile.write(json.dumps(next(completion(False))).encode())
            return
        for chunk in completion(True):
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")


@contextmanager
def serving() -> Iterator[str]:
    """The server on a free loopback port; yields its `/v1` base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
