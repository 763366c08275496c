"""One batch of commands in one round trip over a redis-py connection, without a Pipeline.

redis-py's `Pipeline` costs about as much client time per batch as the round trip
itself (per-command option handling, HIMPORT bookkeeping, observability hooks), and
sends every large argument with a syscall of its own. The saver's batches need none of
that: this drives the client's own connection (from its pool, with its `Retry`, its
response callbacks, its error replies) and sends each batch as one buffer. Like a
Pipeline, a batch takes a connection of the pool for itself, also on a client made with
`single_connection_client` (whose one connection is not to be shared by LangGraph's
threads). Plain `Redis` clients only; cluster clients keep their pipelines, which
route by slot.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import hiredis
import redis
import redis.asyncio as aredis
from redis._parsers.hiredis import NOT_ENOUGH_DATA
from redis.exceptions import ResponseError

Command = Sequence[Any]


def execute(client: redis.Redis, commands: Sequence[Command]) -> list[Any]:
    """Send `commands` and read every reply.

    The first error reply is raised after all replies are read, so the connection stays in step.
    """
    pool: Any = client.connection_pool  # redis-py leaves its pools and connections untyped
    conn: Any = pool.get_connection()
    try:
        return conn.retry.call_with_retry(  # type: ignore[no-any-return]
            lambda: _round_trip(client, conn, commands), lambda _error: conn.disconnect()
        )
    finally:
        pool.release(conn)


def _round_trip(client: redis.Redis, conn: Any, commands: Sequence[Command]) -> list[Any]:
    conn.send_packed_command([pack(commands, conn.encoder.encoding)])
    return _replies(client, commands, [_read(conn) for _ in commands])


def pack(commands: Sequence[Command], encoding: str = "utf-8") -> bytes:
    """The batch as one buffer, packed by hiredis as redis-py's own hiredis packer does.

    Str goes in the client's encoding, without the packer's per-argument checks: the saver's
    commands are one-word names with `bytes`, `str` and integer arguments.
    """
    if encoding.lower().replace("-", "") != "utf8":  # hiredis itself encodes str as UTF-8
        commands = [
            [a.encode(encoding) if isinstance(a, str) else a for a in cmd] for cmd in commands
        ]
    return b"".join([hiredis.pack_command(tuple(cmd)) for cmd in commands])


async def aexecute(client: aredis.Redis, commands: Sequence[Command]) -> list[Any]:
    """`execute` over an asyncio client."""
    pool: Any = client.connection_pool
    conn: Any = await pool.get_connection()

    async def round_trip() -> list[Any]:
        await conn.send_packed_command(pack(commands, conn.encoder.encoding))
        # The first reply waits for the server, with the read timeout; the rest came with it.
        raw = [await _aread(conn)] if commands else []
        raw += [await _abuffered(conn) for _ in commands[1:]]
        return _replies(client, commands, raw)

    async def fail(_error: Exception) -> None:
        await conn.disconnect()

    try:
        return await conn.retry.call_with_retry(round_trip, fail)  # type: ignore[no-any-return]
    finally:
        await pool.release(conn)


def _read(conn: Any) -> Any:
    try:
        return conn.read_response()
    except ResponseError as exc:
        return exc


async def _aread(conn: Any) -> Any:
    try:
        return await conn.read_response()
    except ResponseError as exc:
        return exc


async def _abuffered(conn: Any) -> Any:
    """The next reply, taken straight from the hiredis reader when it holds it already.

    The rest of a batch arrives with its first reply: `read_response` would open a timeout scope per
    reply, which costs more than the reply. Else as `_aread`.
    """
    reader = getattr(getattr(conn, "_parser", None), "_reader", None)
    if reader is not None and getattr(conn._parser, "_connected", False):
        reply = reader.gets()
        if reply is not NOT_ENOUGH_DATA:
            if isinstance(reply, redis.ConnectionError):
                raise reply
            return reply
    return await _aread(conn)


def _replies(client: Any, commands: Sequence[Command], raw: list[Any]) -> list[Any]:
    """Raise the first error reply.

    Apply the client's response callbacks, as a Pipeline given the same commands would.
    """
    callbacks = client.response_callbacks
    out = []
    for cmd, reply in zip(commands, raw, strict=True):
        if isinstance(reply, ResponseError):
            raise reply
        callback = callbacks.get(cmd[0])
        out.append(callback(reply) if callback else reply)
    return out
