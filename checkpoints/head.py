"""A thread's head.

Its newest root checkpoint and how many pending writes that checkpoint has, read in two round trips
without LangGraph (the member grammar is `graphwright.checkpoints.codec`'s).

A summary recorded for a head describes the thread for as long as the head is the same:
every step, update or resume adds a checkpoint or a write.
"""

from __future__ import annotations

from dataclasses import dataclass

import redis

from graphwright.checkpoints.keys import Keys, escape

_SEP = b"\x00"


@dataclass(frozen=True, kw_only=True)
class Head:
    """A thread's newest checkpoint and how many writes it has, read in one step."""

    checkpoint_id: str
    writes: int


def read_head(client: redis.Redis, keys: Keys, thread_id: str) -> Head | None:
    """The thread's head now; None when it has no checkpoint in this layout."""
    root = escape("").encode() + _SEP  # codec.ns_prefix("")
    newest = client.zrevrangebylex(
        keys.checkpoints(thread_id), b"(" + root[:-1] + b"\x01", b"[" + root, start=0, num=1
    )
    if not newest:
        return None
    member: bytes = newest[0] if isinstance(newest[0], bytes) else newest[0].encode()
    checkpoint_id = member[len(root) :].split(_SEP, 1)[0]
    prefix = root + checkpoint_id + _SEP  # codec.checkpoint_prefix("", id)
    writes = client.zlexcount(
        keys.write_index(thread_id), b"[" + prefix, b"(" + prefix[:-1] + b"\x01"
    )
    return Head(checkpoint_id=checkpoint_id.decode(), writes=int(writes))
