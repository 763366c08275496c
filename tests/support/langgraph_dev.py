"""LangGraph's own server (`langgraph dev`, in-memory, offline) on a free port, for comparisons."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from graphwright.testing.service import free_port
from graphwright.testing.until import scaled


@contextmanager
def langgraph_dev(project: Path, env: dict[str, str] | None = None) -> Iterator[str]:
    """Serve the langgraph.json in `project`; yields the base URL. Output goes to dev.log."""
    port = free_port()
    binary = Path(sys.executable).with_name("langgraph")
    child_env = {
        **os.environ,
        **(env or {}),
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGSMITH_TRACING": "false",
        "LANGCHAIN_TRACING_V2": "false",
    }
    child_env.pop("LANGSMITH_API_KEY", None)
    log = (project / "dev.log").open("w")
    proc = subprocess.Popen(
        [
            str(binary),
            "dev",
            "--no-browser",
            "--no-reload",
            "--port",
            str(port),
            "--host",
            "127.0.0.1",
            "--config",
            str(project / "langgraph.json"),
        ],
        cwd=project,
        env=child_env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + scaled(60)
        while True:  # its readiness is only visible as /ok answering
            assert proc.poll() is None, (project / "dev.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "langgraph dev did not start in 60 s"
            try:
                if httpx.get(f"{url}/ok", timeout=scaled(1)).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # its own session: the server and any child
        try:
            proc.wait(timeout=scaled(15))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
