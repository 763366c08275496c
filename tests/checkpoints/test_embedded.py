"""The embedded Redis: shared by processes on one folder, durable across restarts."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from graphwright.checkpoints.embedded import EmbeddedRedis
from graphwright.testing.until import scaled

# Slow: the embedded server shared by processes and restarted
pytestmark = pytest.mark.slow

SCRIPT = """
import sys
from graphwright.checkpoints.embedded import EmbeddedRedis
import redis
server = EmbeddedRedis(sys.argv[1])
url = server.start()
client = redis.Redis.from_url(url)
client.incr("visits")
print(client.info("server")["process_id"])
"""


def _visit(home: Path) -> int:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(home)], capture_output=True, text=True, check=True
    )
    return int(out.stdout.strip())


def test_processes_share_one_server_and_data_survives_a_restart(tmp_path: Path) -> None:
    home = tmp_path / "state"
    server = EmbeddedRedis(home)
    try:
        first, second = _visit(home), _visit(home)
        assert first == second, "the second process must join the running server"
        assert (home / "redis.pid").read_text().strip() == str(first)
        begun = time.monotonic()
        server.stop()
        assert not server.is_running()
        # SHUTDOWN is sent once (redis-py's default retries resent it for 4 s after it closed)
        assert time.monotonic() - begun < scaled(2)
        third = _visit(home)
        assert third != first
        assert int(redis.Redis.from_url(server.url).get("visits") or 0) == 3
        assert (home / "appendonly.aof").exists() or (home / "appendonlydir").exists()
    finally:
        server.stop()


def test_home_comes_from_the_environment(tmp_path: Path, monkeypatch: object) -> None:
    os.environ["GRAPHWRIGHT_HOME"] = str(tmp_path / "elsewhere")
    try:
        assert EmbeddedRedis().home == (tmp_path / "elsewhere").resolve()
    finally:
        del os.environ["GRAPHWRIGHT_HOME"]


def test_a_long_folder_path_still_gets_a_usable_socket(tmp_path: Path) -> None:
    home = tmp_path / ("deep" * 30)
    server = EmbeddedRedis(home)
    try:
        url = server.start()
        assert len(url) < 120
        assert redis.Redis.from_url(url).ping()
    finally:
        server.stop()
