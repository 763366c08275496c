"""llama.cpp's OpenAI-compatible server (llama-cpp-python's `llama_cpp.server`) serving
SmolLM2-135M-Instruct, both installed apart by `scripts/real-model`: the real, small and
imperfect local model of the slow tests. Nothing is downloaded from a model hub."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from graphwright.testing.redis_servers import free_port
from graphwright.testing.until import scaled, until
from tests.support.paths import ROOT


@dataclass(frozen=True)
class LlamaServer:
    base_url: str
    pid: int

    def pause(self) -> None:
        """Freeze the server (SIGSTOP): it accepts connections and answers nothing."""
        os.kill(self.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.pid, signal.SIGCONT)


def install() -> tuple[Path, Path]:
    """The venv's python and the model's GGUF file, installing them on first use."""
    done = subprocess.run(
        [str(ROOT / "scripts" / "real-model")],
        capture_output=True,
        text=True,
        timeout=scaled(1800),
        check=False,
    )
    assert done.returncode == 0, f"scripts/real-model failed:\n{done.stderr[-3000:]}"
    python, gguf = (Path(line) for line in done.stdout.strip().splitlines()[-2:])
    return python, gguf


def answering(url: str) -> bool:
    try:
        return httpx.get(f"{url}/models", timeout=scaled(1)).status_code == 200
    except httpx.TransportError:
        return False


# Most tokens one generation may hold, on the server's side (`llama_capped.py`): its tool-call
# handler ignores a request's own `max_tokens`.
N_PREDICT = 256


@contextmanager
def llama_server(log: Path) -> Iterator[LlamaServer]:
    """The server on a free loopback port, with tool calls (chatml-function-calling)."""
    python, gguf = install()
    port = free_port()
    with log.open("w") as out:
        proc = subprocess.Popen(
            [
                str(python),
                str(ROOT / "tests" / "support" / "llama_capped.py"),
                str(N_PREDICT),
                "--model",
                str(gguf),
                "--model_alias",
                "smollm2-135m",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--n_ctx",
                "4096",
                # One thread: llama.cpp's threads meet at a spinning barrier each step, and on a
                # busy machine (the suite beside it) two threads then run ten times slower.
                "--n_threads",
                "1",
                "--n_threads_batch",
                "1",
                "--chat_format",
                "chatml-function-calling",
                "--verbose",
                "false",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        until(lambda: proc.poll() is not None or answering(url), "llama_cpp.server to answer", 120)
        assert proc.poll() is None, log.read_text()[-3000:]
        yield LlamaServer(base_url=url, pid=proc.pid)
    finally:
        os.killpg(proc.pid, signal.SIGCONT)  # a paused server cannot act on SIGTERM
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=scaled(15))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
