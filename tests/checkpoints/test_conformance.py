"""LangGraph's own conformance suite, base and extended, against our savers.

`RedisSaver`'s async methods run its sync methods in a thread, so running the suite
against it covers the sync code paths too; `AsyncRedisSaver` covers the async ones.
Both run against the Debian Redis of the test session and the embedded Redis.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import redis
import redis.asyncio as aredis
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.report import ProgressCallbacks

from graphwright.checkpoints.embedded import EmbeddedRedis
from graphwright.checkpoints.redis import AsyncRedisSaver, RedisSaver
from graphwright.testing.redis_servers import Server

EXPECTED_TESTS = 81  # 58 base + 23 extended at langgraph-checkpoint-conformance 0.0.2


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[EmbeddedRedis]:
    server = EmbeddedRedis(tmp_path_factory.mktemp("embedded"))
    server.start()
    yield server  # type: ignore[misc]
    server.stop()


def _url(kind: str, redis_server: Server, embedded: EmbeddedRedis) -> str:
    return redis_server.url if kind == "debian" else embedded.url


async def _run(factory_name: str, make: object) -> None:
    registered = checkpointer_test(name=factory_name)(make)
    failures: list[str] = []

    def record(cap: str, name: str, ok: bool, tb: str | None) -> None:
        if not ok:
            failures.append(f"{cap}.{name}\n{tb}")

    report = await validate(registered, progress=ProgressCallbacks(on_test_result=record))
    total = sum(r.tests_passed + r.tests_failed for r in report.results.values())
    assert failures == [], "\n".join(failures)
    assert report.passed_all(), report.to_dict()
    assert total == EXPECTED_TESTS


@pytest.mark.parametrize("kind", ["debian", "embedded"])
async def test_sync_saver_passes_the_full_conformance_suite(
    kind: str, redis_server: Server, embedded: EmbeddedRedis
) -> None:
    url = _url(kind, redis_server, embedded)
    version = redis.Redis.from_url(url).info("server")["redis_version"]
    assert int(version.split(".")[0]) >= (7 if kind == "debian" else 6), version

    async def make() -> AsyncIterator[BaseCheckpointSaver[str]]:
        client = redis.Redis.from_url(url)
        yield RedisSaver(client, prefix=f"c{uuid.uuid4().hex[:10]}")
        client.close()

    await _run(f"RedisSaver-{kind}", make)


@pytest.mark.parametrize("kind", ["debian", "embedded"])
async def test_async_saver_passes_the_full_conformance_suite(
    kind: str, redis_server: Server, embedded: EmbeddedRedis
) -> None:
    url = _url(kind, redis_server, embedded)

    async def make() -> AsyncIterator[BaseCheckpointSaver[str]]:
        client = aredis.Redis.from_url(url)
        yield AsyncRedisSaver(client, prefix=f"c{uuid.uuid4().hex[:10]}")
        await client.aclose()

    await _run(f"AsyncRedisSaver-{kind}", make)


def test_embedded_data_lives_in_the_given_folder(embedded: EmbeddedRedis, tmp_path: Path) -> None:
    assert embedded.home.is_dir()
    assert (embedded.home / "redis.pid").exists()
    client = redis.Redis.from_url(embedded.url)
    # The server keeps its data (the append-only file) in the folder it was given.
    assert client.config_get("dir")["dir"] == str(embedded.home)
    assert client.config_get("appendonly")["appendonly"] == "yes"
    client.close()
