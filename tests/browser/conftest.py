"""The browser tests' shared fixture: a page served from an origin of its own."""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from graphwright.testing.service import free_port


@pytest.fixture
def page_origin(page_dir: Path) -> Iterator[str]:
    """`page_dir` (each module says what it holds) served on another port: another origin."""
    port = free_port()
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(page_dir))
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    yield f"http://127.0.0.1:{port}"
    server.shutdown()
