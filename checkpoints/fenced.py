"""A run's hash writes that a takeover must stop: HSET only while the fence is the run's.

The thread's meta, a run record's fields: a process frozen past its lock's expiry that
wakes up after another took the thread over gets `LockLostError` and writes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping

import redis

from graphwright.checkpoints.errors import LockLostError
from graphwright.checkpoints.keys import Keys

# KEYS: hash, fence, [registry]. ARGV: fence ('' = unfenced), field, value, ...
HSET = """
if ARGV[1] ~= '' and redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
if KEYS[3] then redis.call('SADD', KEYS[3], KEYS[1]) end
return 1
"""


def fenced_hset(
    client: redis.Redis,
    keys: Keys,
    thread_id: str,
    key: str,
    mapping: Mapping[str, bytes | str],
    fence: int | None,
    *,
    registry: bool = False,
) -> None:
    """HSET `mapping` on `key` (a key of the thread), refused once `fence` is stale.

    Raises:
        LockLostError: a newer run holds the thread; nothing was written.
    """
    names = [key, keys.fence(thread_id)] + ([keys.registry(thread_id)] if registry else [])
    pairs = [x for kv in mapping.items() for x in kv]
    done = client.eval(HSET, len(names), *names, "" if fence is None else str(fence), *pairs)
    if not done:
        raise LockLostError(f"thread {thread_id!r} is held by a newer run; {key} was not written")


# KEYS: hash, registry. ARGV: field, value, ...
_HSET_NEW = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV))
redis.call('SADD', KEYS[2], KEYS[1])
return 1
"""


def hset_new(
    client: redis.Redis, keys: Keys, thread_id: str, key: str, mapping: Mapping[str, bytes | str]
) -> bool:
    """Create the hash `key` (a key of the thread) with `mapping` in one step, only if absent.

    Of two callers creating it at once exactly one gets True.
    """
    pairs = [x for kv in mapping.items() for x in kv]
    return bool(client.eval(_HSET_NEW, 2, key, keys.registry(thread_id), *pairs))
