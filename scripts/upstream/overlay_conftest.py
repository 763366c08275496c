

# --- graphwright: the Redis savers in LangGraph's checkpointer fixtures ----------
# Appended to LangGraph's own tests/conftest.py by scripts/upstream/run.py; the
# fixtures below replace the two defined above, with the same upstream savers (those
# that need no Docker) plus RedisSaver and AsyncRedisSaver on a test Redis.
import os as _gw_os  # noqa: E402
import secrets as _gw_secrets  # noqa: E402
from contextlib import asynccontextmanager as _gw_acm  # noqa: E402
from contextlib import contextmanager as _gw_cm  # noqa: E402

import redis.asyncio as _gw_aredis  # noqa: E402

from checkpoints.redis import AsyncRedisSaver as _GwAsyncSaver  # noqa: E402
from checkpoints.redis import RedisSaver as _GwSaver  # noqa: E402

_GW_URL = _gw_os.environ["GW_UPSTREAM_REDIS_URL"]
_GW_ONLY_REDIS = _gw_os.environ.get("GW_UPSTREAM_ONLY_REDIS") == "1"


@_gw_cm
def _checkpointer_redis():
    client = redis.Redis.from_url(_GW_URL)
    try:
        yield _GwSaver(client, prefix=f"up{_gw_secrets.token_hex(6)}")
    finally:
        client.close()


@_gw_acm
async def _checkpointer_redis_aio():
    client = _gw_aredis.Redis.from_url(_GW_URL)
    try:
        yield _GwAsyncSaver(client, prefix=f"up{_gw_secrets.token_hex(6)}")
    finally:
        await client.aclose()


_GW_SYNC = {
    "memory": _checkpointer_memory,
    "memory_migrate_sends": _checkpointer_memory_migrate_sends,
    "sqlite": _checkpointer_sqlite,
    "sqlite_aes": _checkpointer_sqlite_aes,
    "redis": _checkpointer_redis,
}
_GW_ASYNC = {"memory": _checkpointer_memory, "sqlite_aio": _checkpointer_sqlite_aio}


@pytest.fixture(scope="function", params=["redis"] if _GW_ONLY_REDIS else list(_GW_SYNC))
def sync_checkpointer(request: pytest.FixtureRequest) -> Iterator[BaseCheckpointSaver]:
    with _GW_SYNC[request.param]() as checkpointer:
        yield checkpointer


@pytest.fixture(
    scope="function",
    params=["redis_aio"] if _GW_ONLY_REDIS else [*_GW_ASYNC, "redis_aio"],
)
async def async_checkpointer(
    request: pytest.FixtureRequest,
) -> AsyncIterator[BaseCheckpointSaver]:
    if request.param == "redis_aio":
        async with _checkpointer_redis_aio() as checkpointer:
            yield checkpointer
    elif request.param == "sqlite_aio":
        async with _checkpointer_sqlite_aio() as checkpointer:
            yield checkpointer
    else:
        with _GW_ASYNC[request.param]() as checkpointer:
            yield checkpointer
