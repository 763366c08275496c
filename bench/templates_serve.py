"""Serve one template with `graphwright serve` or with `langgraph dev` on a free port.

Each server runs in its own process group from its venv, with a user's environment (no
PYTHONPATH into this repository), and is stopped with its children when the block ends.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx

from bench.templates_venvs import Venv
from graphwright.testing.redis_servers import free_port
from graphwright.testing.until import scaled, until

START_S = 120  # langgraph dev imports langchain and the template: tens of seconds on 2 cores


def user_env(**extra: str) -> dict[str, str]:
    """This process's environment as a user's shell would have it, plus `extra`."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(
            (
                "PYTHON",
                "GRAPHWRIGHT_",
                "OPENAI_",
                "VIRTUAL_ENV",
                "LANGSMITH_",
                "LANGCHAIN_",
                "ANTHROPIC_",
                "TAVILY_",
            )
        )
    }
    return {**env, "LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGSMITH_TRACING": "false", **extra}


@contextmanager
def graphwright_serve(
    venv: Venv, template: Path, env: dict[str, str], log: Path, *, queue: bool = False
) -> Iterator[str]:
    """`graphwright serve` in the template's folder, as its user would start it.

    With `queue`, `serve --queue` and one `graphwright worker` beside it.
    """
    port = free_port()
    base = [str(venv.bin("graphwright")), "--config", str(template / "langgraph.json")]
    command = [
        *base,
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        *(["--queue"] if queue else []),
    ]
    with ExitStack() as stack:
        if queue:
            worker_log = stack.enter_context(log.with_suffix(".worker.log").open("wb"))
            worker = subprocess.Popen(
                [*base, "worker"],
                cwd=template,
                env=env,
                stdout=worker_log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            stack.callback(_stop, worker)
        yield stack.enter_context(_serving(command, template, env, log, port))


@contextmanager
def langgraph_dev(venv: Venv, folder: Path, env: dict[str, str], log: Path) -> Iterator[str]:
    """`langgraph dev` (in memory, no browser, no reload) in `folder`."""
    port = free_port()
    command = [
        str(venv.bin("langgraph")),
        "dev",
        "--no-browser",
        "--no-reload",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--config",
        str(folder / "langgraph.json"),
    ]
    with _serving(command, folder, env, log, port) as url:
        yield url


@contextmanager
def _serving(
    command: list[str], cwd: Path, env: dict[str, str], log: Path, port: int
) -> Iterator[str]:
    url = f"http://127.0.0.1:{port}"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:

            def ready() -> bool:
                if proc.poll() is not None:
                    raise ServerExited(_tail(log))
                try:
                    return httpx.get(f"{url}/ok", timeout=scaled(2)).status_code == 200
                except httpx.TransportError:
                    return False

            until(ready, f"{command[0]} to answer /ok", START_S, interval_s=0.2)
            yield url
        finally:
            _stop(proc)


class ServerExited(RuntimeError):
    """The server's process ended before it answered; the message is its log's tail."""


def _tail(log: Path) -> str:
    lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    errors = [line for line in lines if "Error" in line or line.startswith("error")]
    return (errors[-1] if errors else " ".join(lines[-2:]))[:600]


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)  # its own session: the server and its children
    try:
        proc.wait(timeout=scaled(20))
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
