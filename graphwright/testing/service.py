"""The HTTP service on a free loopback port in this process, with an optional in-process worker."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import uvicorn
from langchain_core.language_models import BaseChatModel
from langgraph_sdk import Auth

from graphwright import Orchestrator
from graphwright.server.app import create_app
from graphwright.server.background.worker import Worker
from graphwright.settings import Settings
from graphwright.testing.redis_servers import free_port
from graphwright.testing.until import scaled


@dataclass
class Service:
    """The running service's base URL and the Orchestrator it serves."""

    url: str
    orch: Orchestrator


@contextmanager
def running(
    orch: Orchestrator,
    *,
    api_key: str | None = None,
    worker: bool = True,
    queue_waits: bool = False,
    auth: Auth | None = None,
) -> Iterator[Service]:
    """Serve `orch` over HTTP (the LangGraph Agent Server API) for the `with` block.

    A worker thread consumes the run queue unless `worker=False`.
    """
    listening = socket.socket()  # bound here, so no other process can take its port first
    listening.bind(("127.0.0.1", free_port()))
    port = int(listening.getsockname()[1])
    app = create_app(orch, api_key=api_key, queue_waits=queue_waits, auth=auth)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    serving = threading.Thread(target=server.run, kwargs={"sockets": [listening]}, daemon=True)
    serving.start()
    deadline = time.monotonic() + scaled(30)
    while not server.started:
        assert time.monotonic() < deadline and serving.is_alive(), "the server did not start"
        time.sleep(0.01)
    consumer = (
        Worker(orch, name="in-test", claim_idle_ms=60_000, block_ms=100, grace_s=5)
        if worker
        else None
    )
    working = threading.Thread(target=consumer.run_forever, daemon=True) if consumer else None
    if working:
        working.start()
    try:
        yield Service(url=f"http://127.0.0.1:{port}", orch=orch)
    finally:
        if consumer and working:
            consumer.stop.set()
            working.join(timeout=scaled(10))
        server.should_exit = True
        serving.join(timeout=scaled(10))
        listening.close()


LOOPBACK = "127.0.0.0/8,::1/128"  # GRAPHWRIGHT_WEBHOOK_ALLOW for a test's local receivers


@contextmanager
def service_for(
    redis_url: str,
    prefix: str,
    graphs: str,
    *,
    model: BaseChatModel | None = None,
    worker: bool = True,
    queue_waits: bool = False,
) -> Iterator[Service]:
    """`running` for an Orchestrator on a test's Redis and key prefix.

    It serves the graphs the plugin `graphs` registers (and `model`, if given). Webhooks may reach
    loopback receivers (`LOOPBACK`), the only ones a test has.
    """
    settings = Settings(
        _env_file=None,
        REDIS_URL=redis_url,
        GRAPHWRIGHT_KEY_PREFIX=prefix,  # type: ignore[call-arg]
        GRAPHWRIGHT_GRAPHS=graphs,
        GRAPHWRIGHT_WEBHOOK_ALLOW=LOOPBACK,
    )
    orch = Orchestrator(settings=settings, model=model)
    with running(orch, worker=worker, queue_waits=queue_waits) as svc:
        yield svc
