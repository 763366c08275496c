"""The two servers of the protocol tests, started once per session: LangGraph's own
`langgraph dev` (installed apart by `scripts/reference-server`) and graphwright's
service, serving the same graphs (tests/support/protocol_graphs.py) against the same fixed
streaming chat model (graphwright/testing/fixed_openai.py)."""

from __future__ import annotations

import asyncio
import inspect
import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from graphwright.offline import OfflineChatModel
from graphwright.testing.service import Service, free_port, service_for
from graphwright.testing.until import scaled
from tests.support.paths import ROOT, SUPPORT

PLUGIN = "tests.support.protocol_graphs:register"


def install_reference() -> Path | None:
    """The `langgraph` executable, installing it on first use; None when that fails."""
    done = subprocess.run(
        [str(ROOT / "scripts" / "reference-server")],
        capture_output=True,
        text=True,
        timeout=scaled(900),
        check=False,
    )
    path = (
        Path(done.stdout.strip().splitlines()[-1])
        if done.returncode == 0 and done.stdout.strip()
        else None
    )
    return path if path and path.exists() else None


@contextmanager
def reference_server(chat_url: str) -> Iterator[str | None]:
    exe = install_reference()
    if exe is None:
        yield None
        return
    port = free_port()
    env = {
        **os.environ,
        "PROTOCOL_CHAT_URL": chat_url,
        "LANGSMITH_TRACING": "false",
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    }
    proc = subprocess.Popen(
        [str(exe), "dev", "--no-browser", "--no-reload", "--allow-blocking", "--port", str(port)],
        cwd=SUPPORT / "reference",
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + scaled(120)
        while True:
            try:
                if httpx.get(f"{url}/ok", timeout=scaled(2)).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                yield None
                return
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=scaled(30))


@contextmanager
def graphwright_server(redis_url: str, *, worker: bool = True) -> Iterator[Service]:
    """graphwright's service with `LANGGRAPH_API_URL` and `ALLOW_PRIVATE_NETWORK` set, as
    `langgraph dev` and `graphwright serve` on a loopback address set them (runs' metadata
    and checkpoints name the first; the second answers private-network preflights)."""
    prefix = f"proto{uuid.uuid4().hex[:8]}"
    setting = {
        "LANGGRAPH_API_URL": "http://127.0.0.1",  # a value to name; masked in the diff
        "ALLOW_PRIVATE_NETWORK": "true",
    }
    before = {key: os.environ.get(key) for key in setting}
    os.environ.update(setting)
    try:
        with service_for(redis_url, prefix, PLUGIN, model=OfflineChatModel(), worker=worker) as svc:
            yield svc
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


class Blocking:
    """The async SDK client driven from synchronous test code, call by call, on one loop:
    coroutines are awaited, async iterators collected."""

    def __init__(self, target: Any, loop: asyncio.AbstractEventLoop) -> None:
        self._target = target
        self._loop = loop

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if not callable(value):
            return Blocking(value, self._loop)

        def call(*args: Any, **kwargs: Any) -> Any:
            result = value(*args, **kwargs)
            if inspect.isawaitable(result):
                return self._loop.run_until_complete(result)
            if hasattr(result, "__aiter__"):
                return self._loop.run_until_complete(_collect(result))
            return result

        return call


async def _collect(items: Any) -> list[Any]:
    return [item async for item in items]
