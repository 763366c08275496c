"""Re-encrypt what is stored with the newest key (``graphwright rekey``).

Walks every key under the prefix with SCAN and re-seals each sealed value that an older
key sealed, wherever it sits: a whole string, a hash field, a stream entry, the bytes of a
``type\\x00data`` blob or an element of a msgpack list (checkpoint documents and writes).
Checkpoints LangGraph's own ``aes`` cipher wrote are moved to the sealer too. Each write
is compare-and-set in a script, so a value rewritten meanwhile is left to its writer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import ormsgpack
import redis

from checkpoints.sealed import CIPHER_NAME, Sealer, is_sealed, open_langgraph_aes

LEGACY = "+aes"
SET_IF_SAME = """
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL') return 1 end
return 0
"""
HSET_IF_SAME = """
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then redis.call('HSET', KEYS[1], ARGV[1], ARGV[3]) return 1 end
return 0
"""


@dataclass
class RekeyReport:
    keys_seen: int = 0
    values_resealed: int = 0


def reseal(sealer: Sealer, raw: bytes) -> bytes | None:
    """``raw`` with every stale sealed part re-sealed by the newest key; None if none is stale."""
    if is_sealed(raw):
        return sealer.seal(sealer.open(raw)) if sealer.stale(raw) else None
    type_, sep, data = raw.partition(b"\x00")
    if sep and b"+" in type_ and b" " not in type_:
        moved = _typed(sealer, type_.decode(errors="replace"), data)
        if moved is not None:
            return moved[0].encode() + sep + moved[1]
    if raw and (0x90 <= raw[0] <= 0x9F or raw[0] in (0xDC, 0xDD)):  # a msgpack array
        try:
            items = ormsgpack.unpackb(raw)
        except (ormsgpack.MsgpackDecodeError, ValueError):
            return None
        if isinstance(items, list) and _list(sealer, items):
            packed: bytes = ormsgpack.packb(items)
            return packed
    return None


def _typed(sealer: Sealer, type_: str, data: bytes) -> tuple[str, bytes] | None:
    if type_.endswith(LEGACY):
        return type_[: -len(LEGACY)] + "+" + CIPHER_NAME, sealer.seal(open_langgraph_aes(sealer.keys, data))
    if type_.endswith("+" + CIPHER_NAME) and sealer.stale(data):
        return type_, sealer.seal(sealer.open(data))
    return None


def _list(sealer: Sealer, items: list[Any]) -> bool:
    changed = False
    for i, item in enumerate(items):
        if not isinstance(item, bytes):
            continue
        before = items[i - 1] if i else None
        if isinstance(before, str) and "+" in before:
            moved = _typed(sealer, before, item)
            if moved is not None:
                items[i - 1], items[i] = moved
                changed = True
        elif (again := reseal(sealer, item)) is not None:
            items[i] = again
            changed = True
    return changed


def rekey(client: redis.Redis, sealer: Sealer, prefix: str) -> RekeyReport:
    """Re-seal every stale value under ``prefix``; safe to run again or while serving."""
    report = RekeyReport()
    for key in client.scan_iter(match=f"{prefix}:*", count=500):
        report.keys_seen += 1
        kind = client.type(key)
        kind = kind.decode() if isinstance(kind, bytes) else kind
        if kind == "string":
            raw = client.get(key)
            new = reseal(sealer, raw) if isinstance(raw, bytes) else None
            if new is not None:
                report.values_resealed += int(client.eval(SET_IF_SAME, 1, key, raw, new))  # type: ignore[arg-type]  # bytes values
        elif kind == "hash":
            fields: dict[bytes, bytes] = client.hgetall(key)  # type: ignore[assignment]  # bytes client
            for name, raw in fields.items():
                if (new := reseal(sealer, raw)) is not None:
                    report.values_resealed += int(client.eval(HSET_IF_SAME, 1, key, name, raw, new))
        elif kind == "stream":
            report.values_resealed += _stream(client, sealer, key)
        elif kind == "zset":
            report.values_resealed += _zset(client, sealer, key)
    return report


# KEYS: the sorted set. ARGV: old member, new member. Swaps them, keeping the score.
ZSWAP_IF_SAME = """
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[1], score, ARGV[2])
return 1
"""


def _zset(client: redis.Redis, sealer: Sealer, key: bytes) -> int:
    """Checkpoint documents live as ``ns NUL id NUL document`` members of the thread's ``cp``."""
    done = 0
    for member, _ in client.zscan_iter(key, count=500):
        head, sep, rest = member.partition(b"\x00")
        cid, sep2, doc = rest.partition(b"\x00")
        if not (sep and sep2):
            continue
        if (new := reseal(sealer, doc)) is not None:
            done += int(client.eval(ZSWAP_IF_SAME, 1, key, member,
                                    head + sep + cid + sep2 + new))
    return done


def _stream(client: redis.Redis, sealer: Sealer, key: bytes) -> int:
    """Rebuild a stream (entry ids and TTL kept) when any entry holds a stale value.

    WATCH makes it all-or-nothing: an event appended meanwhile leaves the stream for a later run."""
    with client.pipeline(transaction=True) as pipe:
        try:
            pipe.watch(key)  # type: ignore[no-untyped-call]  # redis-py leaves watch untyped
            entries: list[tuple[bytes, dict[bytes, bytes]]] = pipe.xrange(key)  # type: ignore[assignment]  # bytes client
            rebuilt, count = [], 0
            for entry_id, fields in entries:
                new_fields = {}
                for name, raw in fields.items():
                    new = reseal(sealer, raw)
                    count += new is not None
                    new_fields[name] = raw if new is None else new
                rebuilt.append((entry_id, new_fields))
            if not count:
                return 0
            ttl = pipe.pttl(key)
            pipe.multi()
            pipe.delete(key)
            for entry_id, new_fields in rebuilt:
                pipe.xadd(key, new_fields, id=entry_id)  # type: ignore[arg-type]  # bytes fields
            if isinstance(ttl, int) and ttl > 0:
                pipe.pexpire(key, ttl)
            pipe.execute()
        except redis.WatchError:
            return 0
    return count
