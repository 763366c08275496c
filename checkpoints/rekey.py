r"""Re-encrypt what is stored with the newest key, and seal what was written in the clear.

The first is `graphwright rekey`, the second `graphwright seal`.

Walks every key under the prefix with SCAN and re-seals each sealed value that an older
key or the old format (`GWS1`, no associated data) sealed, wherever it sits: a whole
string, a hash field, a list element, a stream entry, the bytes of a `type\x00data`
blob or an element of a msgpack list (checkpoint documents and writes). Each value is
sealed again for the key and field it sits at. Checkpoints LangGraph's own `aes`
cipher wrote are moved to the sealer too. With `places` (`graphwright seal`), plain
values at those places are sealed as well. Each write is compare-and-set in a script,
so a value rewritten meanwhile is left to its writer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

import ormsgpack
import redis

from graphwright.checkpoints.keys import Place
from graphwright.checkpoints.sealed import (
    CHECKPOINT_PLACE,
    CIPHER_NAME,
    Sealer,
    is_sealed,
    open_langgraph_aes,
)

LEGACY = "+aes"
SERDE_TYPES = frozenset({"msgpack", "json", "bytes", "bytearray", "null", "pickle"})  # LangGraph's
SET_IF_SAME = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
  return 1
end
return 0
"""
HSET_IF_SAME = """
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
  return 1
end
return 0
"""
LSET_IF_SAME = """
if redis.call('LINDEX', KEYS[1], ARGV[1]) == ARGV[2] then
  redis.call('LSET', KEYS[1], ARGV[1], ARGV[3])
  return 1
end
return 0
"""


@dataclass
class RekeyReport:
    """What `rekey` or `seal` did, for the CLI to print."""

    keys_seen: int = 0
    values_resealed: int = 0
    values_sealed: int = 0  # plain values sealed (`graphwright seal`)


@dataclass(frozen=True)
class _Spot:
    """One value's place and what may be done to it there."""

    sealer: Sealer
    key: bytes
    field: bytes = b""
    plain: bool = False  # seal it if it is in the clear
    typed: bool = False  # a checkpoint value: plain `type` then bytes are sealed too


def reseal(spot: _Spot, raw: bytes) -> bytes | None:
    """`raw` with every stale (or, at a sealed place, plain) part sealed by the newest key.

    Each part is sealed for its place; None if nothing changes.
    """
    sealer = spot.sealer
    if is_sealed(raw):
        if not sealer.stale(raw):
            return None
        return sealer.seal(sealer.open(raw, spot.key, spot.field), spot.key, spot.field)
    type_, sep, data = raw.partition(b"\x00")
    if sep and b" " not in type_ and (b"+" in type_ or spot.typed):
        moved = _typed(spot, type_.decode(errors="replace"), data)
        if moved is not None:
            return moved[0].encode() + sep + moved[1]
    if raw and (0x90 <= raw[0] <= 0x9F or raw[0] in (0xDC, 0xDD)):  # a msgpack array
        try:
            items = ormsgpack.unpackb(raw)
        except (ormsgpack.MsgpackDecodeError, ValueError):
            items = None
        if isinstance(items, list) and _list(spot, items):
            packed: bytes = ormsgpack.packb(items)
            return packed
    if spot.plain and not spot.typed:
        return sealer.seal(raw, spot.key, spot.field)
    return None


def _typed(spot: _Spot, type_: str, data: bytes) -> tuple[str, bytes] | None:
    sealer = spot.sealer
    if type_.endswith(LEGACY):
        plain = open_langgraph_aes(sealer.keys, data)
        return type_[: -len(LEGACY)] + "+" + CIPHER_NAME, sealer.seal(plain, CHECKPOINT_PLACE)
    if type_.endswith("+" + CIPHER_NAME) and sealer.stale(data):
        return type_, sealer.seal(sealer.open(data, CHECKPOINT_PLACE), CHECKPOINT_PLACE)
    if spot.plain and spot.typed and type_ in SERDE_TYPES:
        return type_ + "+" + CIPHER_NAME, sealer.seal(data, CHECKPOINT_PLACE)
    return None


def _list(spot: _Spot, items: list[Any]) -> bool:
    changed = False
    for i, item in enumerate(items):
        if not isinstance(item, bytes):
            continue
        before = items[i - 1] if i else None
        if isinstance(before, str) and ("+" in before or spot.typed):
            moved = _typed(spot, before, item)
            if moved is not None:
                items[i - 1], items[i] = moved
                changed = True
        elif is_sealed(item) and (again := reseal(spot, item)) is not None:
            items[i] = again
            changed = True
    return changed


def _place(key: bytes, places: Sequence[Place]) -> Place | None:
    text = key.decode(errors="replace")
    return next((p for p in places if fnmatchcase(text, p.glob)), None)


def rekey(
    client: redis.Redis, sealer: Sealer, prefix: str, places: Sequence[Place] = ()
) -> RekeyReport:
    """Re-seal every stale value under `prefix` (and seal plain ones at `places`).

    Safe to run again or while serving.
    """
    report = RekeyReport()
    seen: set[bytes] = set()
    for match in (f"{prefix}:*", f"{{{prefix}:*"):  # some keys open with their hash tag
        for key in client.scan_iter(match=match, count=500):
            if key not in seen:
                seen.add(key)
                _rekey_one(client, sealer, key, _place(key, places), report)
    report.keys_seen = len(seen)
    return report


def _rekey_one(
    client: redis.Redis, sealer: Sealer, key: bytes, place: Place | None, report: RekeyReport
) -> None:
    def spot(field: bytes = b"") -> _Spot:
        plain = place is not None and (place.fields is None or field in place.fields)
        return _Spot(sealer, key, field, plain=plain, typed=place is not None and place.typed)

    def count(raw: bytes, done: int) -> None:
        if is_sealed(raw) or b"+" in raw.partition(b"\x00")[0]:
            report.values_resealed += done
        else:
            report.values_sealed += done

    kind = client.type(key)
    kind = kind.decode() if isinstance(kind, bytes) else kind
    if kind in _BY_KIND:
        _BY_KIND[kind](client, spot, key, count)
    elif kind == "stream":
        report.values_resealed += _stream(client, spot, key)
    elif kind == "zset":
        report.values_resealed += _zset(client, spot(), key)


Count = Callable[[bytes, int], None]  # a value's old bytes and whether its swap landed


def _in_string(client: redis.Redis, spot: Callable[..., _Spot], key: bytes, count: Count) -> None:
    raw = client.get(key)
    if isinstance(raw, bytes) and (new := reseal(spot(), raw)) is not None:
        count(raw, int(client.eval(SET_IF_SAME, 1, key, raw, new)))


def _in_hash(client: redis.Redis, spot: Callable[..., _Spot], key: bytes, count: Count) -> None:
    fields: dict[bytes, bytes] = client.hgetall(key)  # type: ignore[assignment]  # bytes client
    for name, raw in fields.items():
        if (new := reseal(spot(name), raw)) is not None:
            count(raw, int(client.eval(HSET_IF_SAME, 1, key, name, raw, new)))


def _in_list(client: redis.Redis, spot: Callable[..., _Spot], key: bytes, count: Count) -> None:
    elements: list[bytes] = client.lrange(key, 0, -1)  # type: ignore[assignment]  # bytes client
    for index, raw in enumerate(elements):
        if (new := reseal(spot(), raw)) is not None:
            count(raw, int(client.eval(LSET_IF_SAME, 1, key, index, raw, new)))


# Each value is swapped only if unchanged meanwhile.
_BY_KIND: dict[str, Callable[[redis.Redis, Callable[..., _Spot], bytes, Count], None]] = {
    "string": _in_string,
    "hash": _in_hash,
    "list": _in_list,
}


# KEYS: the sorted set. ARGV: old member, new member. Swaps them, keeping the score.
ZSWAP_IF_SAME = """
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[1], score, ARGV[2])
return 1
"""


def _zset(client: redis.Redis, spot: _Spot, key: bytes) -> int:
    """Checkpoint documents live as `ns NUL id NUL document` members of the thread's `cp`."""
    done = 0
    for member, _ in client.zscan_iter(key, count=500):
        head, sep, rest = member.partition(b"\x00")
        cid, sep2, doc = rest.partition(b"\x00")
        if not (sep and sep2):
            continue
        if (new := reseal(spot, doc)) is not None:
            done += int(client.eval(ZSWAP_IF_SAME, 1, key, member, head + sep + cid + sep2 + new))
    return done


def _stream(client: redis.Redis, spot: Any, key: bytes) -> int:
    """Rebuild a stream (entry ids and TTL kept) when any entry holds a stale value.

    WATCH makes it all-or-nothing: an event appended meanwhile leaves the stream for a later run.
    """
    with client.pipeline(transaction=True) as pipe:
        try:
            pipe.watch(key)  # type: ignore[no-untyped-call]  # redis-py leaves watch untyped
            entries: list[tuple[bytes, dict[bytes, bytes]]] = pipe.xrange(key)  # type: ignore[assignment]  # bytes client
            rebuilt, count = [], 0
            for entry_id, fields in entries:
                new_fields = {}
                for name, raw in fields.items():
                    new = reseal(spot(name), raw)
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
