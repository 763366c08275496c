"""What graphwright asks of its Redis server: version, eviction policy, Sentinel URLs."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from graphwright import Orchestrator
from graphwright.checkpoints.connect import SentinelTarget, connect, parse_sentinel_url
from graphwright.checkpoints.server_check import ServerInfo, check_server, problems, server_info
from graphwright.offline import OfflineChatModel
from graphwright.settings import Settings
from graphwright.testing.redis_servers import Server, start_sentinel, start_server
from graphwright.testing.until import scaled
from graphwright_errors import ConfigurationError

pytestmark = pytest.mark.valkey  # on Valkey, the embedded default's server


def test_a_module_marked_valkey_runs_on_valkey_and_so_do_the_servers_it_starts(
    client: redis.Redis, tmp_path: Path
) -> None:
    assert server_info(client.info("server")).name == "valkey"
    own = start_server(tmp_path / "own")
    try:
        assert server_info(redis.Redis(port=own.port).info("server")).name == "valkey"
    finally:
        own.stop()


@pytest.mark.parametrize(
    ("info", "expected"),
    [
        (
            {"redis_version": "7.0.15"},
            ServerInfo(name="redis", version=(7, 0, 15), eviction_policy="noeviction"),
        ),
        (
            {
                "redis_version": "7.2.4",
                "server_name": "valkey",
                "valkey_version": "9.1.2",
                "maxmemory_policy": "allkeys-lru",
            },
            ServerInfo(name="valkey", version=(9, 1, 2), eviction_policy="allkeys-lru"),
        ),
        (
            {"redis_version": "6.2.0-rc1"},
            ServerInfo(name="redis", version=(6, 2, 0), eviction_policy="noeviction"),
        ),
    ],
)
def test_server_info_reads_name_version_and_policy(
    info: dict[str, str], expected: ServerInfo
) -> None:
    assert server_info(info) == expected


def test_servers_older_than_the_minimum_are_named_with_the_fix() -> None:
    old, _ = problems(ServerInfo(name="redis", version=(6, 0, 9), eviction_policy="noeviction"))
    assert old is not None and "redis 6.0.9 is too old" in old and "Redis >= 6.2" in old
    ok, _ = problems(ServerInfo(name="redis", version=(6, 2, 0), eviction_policy="noeviction"))
    assert ok is None
    old_valkey, _ = problems(
        ServerInfo(name="valkey", version=(7, 0), eviction_policy="noeviction")
    )
    assert old_valkey is not None and "Valkey >= 7.2" in old_valkey


@pytest.mark.parametrize(
    "policy", ["allkeys-lru", "allkeys-lfu", "allkeys-random", "volatile-lru", "volatile-ttl"]
)
def test_every_evicting_policy_is_a_problem(policy: str) -> None:
    _, evicts = problems(ServerInfo(name="redis", version=(7, 2), eviction_policy=policy))
    assert evicts is not None and policy in evicts and "noeviction" in evicts


@pytest.fixture
def lru_server(tmp_path: Path) -> Iterator[Server]:
    server = start_server(
        tmp_path / "lru", "--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lru"
    )
    yield server
    server.stop()


def settings_for(url: str, **extra: object) -> Settings:
    return Settings(_env_file=None, REDIS_URL=url, GRAPHWRIGHT_KEY_PREFIX="sc", **extra)  # type: ignore[arg-type]


def test_an_evicting_server_is_warned_about_loudly_at_start(
    lru_server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="graphwright.checkpoints.server_check"):
        orch = Orchestrator(settings=settings_for(lru_server.url), model=OfflineChatModel())
    orch.client.close()
    warning = " ".join(r.getMessage() for r in caplog.records)
    assert "maxmemory-policy is 'allkeys-lru'" in warning
    assert "evict checkpoints" in warning and "noeviction" in warning


def test_an_evicting_server_is_refused_when_the_setting_asks(lru_server: Server) -> None:
    with pytest.raises(ConfigurationError, match=r"allkeys-lru.*GRAPHWRIGHT_REFUSE_EVICTION"):
        Orchestrator(
            settings=settings_for(lru_server.url, GRAPHWRIGHT_REFUSE_EVICTION=True),
            model=OfflineChatModel(),
        )


def test_a_safe_server_passes_without_a_warning(
    redis_server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    client = redis.Redis(port=redis_server.port)
    with caplog.at_level(logging.WARNING, logger="graphwright.checkpoints.server_check"):
        info = check_server(client, refuse_eviction=True)
    client.close()
    assert info.version >= (6, 2) and not caplog.records


@pytest.mark.parametrize(
    ("url", "target"),
    [
        (
            "redis+sentinel://127.0.0.1:26379/mymaster",
            SentinelTarget(sentinels=(("127.0.0.1", 26379),), service="mymaster"),
        ),
        (
            "redis+sentinel://:s3cret@a:1,b:2/svc/3",
            SentinelTarget(sentinels=(("a", 1), ("b", 2)), service="svc", db=3, password="s3cret"),
        ),
    ],
)
def test_sentinel_urls_name_the_sentinels_and_the_service(url: str, target: SentinelTarget) -> None:
    assert parse_sentinel_url(url) == target


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("redis+sentinel://127.0.0.1:26379", "needs sentinels and a service name"),
        ("redis+sentinel://hostonly/svc", "must be host:port"),
        ("redis+sentinel://h:1/svc/x", "must be a number"),
    ],
)
def test_malformed_sentinel_urls_say_what_is_wrong(url: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        parse_sentinel_url(url)


def test_a_run_goes_through_a_sentinel_url(tmp_path: Path) -> None:
    master = start_server(tmp_path / "master")
    port, proc = start_sentinel(tmp_path / "sentinel", master.port)
    try:
        url = f"redis+sentinel://127.0.0.1:{port}/gwmaster"
        orch = Orchestrator(settings=settings_for(url), model=OfflineChatModel())
        result = orch.invoke("agent", "What is 6 * 7?", thread_id="sentinel-run")
        assert result.status == "completed" and "42" in (result.answer or "")
        direct = redis.Redis(port=master.port)
        assert any(b"sentinel-run" in k for k in direct.scan_iter(match="sc:*"))
        direct.close()
        assert connect(url).ping()
    finally:
        proc.terminate()
        proc.wait(timeout=scaled(10))
        master.stop()
