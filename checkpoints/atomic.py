"""Send a batch of write commands as one atomic server-side call.

A Lua script that runs a flat list of commands costs the client one command to pack
and one reply to parse, where MULTI/EXEC costs a reply per queued command; on the
hot path (every ``put`` and ``put_writes``) that is most of the client-side time.
Both are one round trip and neither rolls back, so they are interchangeable; very
large batches (beyond Lua's stack for ``unpack``) fall back to MULTI/EXEC.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from checkpoints.ops import TTL, Command

# ARGV is a flat list: argc, command, args..., argc, command, args...
# The pseudo-command GW.TTL <registry> <seconds> refreshes every key of a thread.
RUN_SCRIPT = """
local i, n = 1, #ARGV
while i <= n do
  local argc = tonumber(ARGV[i])
  if ARGV[i + 1] == 'GW.TTL' then
    local members = redis.call('SMEMBERS', ARGV[i + 2])
    for j = 1, #members do redis.call('EXPIRE', members[j], ARGV[i + 3]) end
    redis.call('EXPIRE', ARGV[i + 2], ARGV[i + 3])
  else
    redis.call(unpack(ARGV, i + 1, i + argc))
  end
  i = i + argc + 1
end
return n
"""
RUN_SHA = hashlib.sha1(RUN_SCRIPT.encode()).hexdigest()

TTL_SCRIPT = """
local members = redis.call('SMEMBERS', KEYS[1])
for i = 1, #members do redis.call('EXPIRE', members[i], ARGV[1]) end
redis.call('EXPIRE', KEYS[1], ARGV[1])
return #members
"""

MAX_SCRIPT_ARGS = 7000  # Lua's unpack() stack limit is near 8000 values


def script_args(commands: Sequence[Command]) -> list[Any] | None:
    """Flatten commands into the script's ARGV, or None when too large for it."""
    if len(commands) < 2:
        return None
    flat: list[Any] = []
    for cmd in commands:
        if len(cmd) > MAX_SCRIPT_ARGS:
            return None
        flat.append(len(cmd))
        flat.extend(cmd)
    return flat


def for_transaction(cmd: Command) -> Command:
    """Translate a pseudo-command for MULTI/EXEC."""
    if cmd[0] == TTL:
        return ("EVAL", TTL_SCRIPT, 1, cmd[1], cmd[2])
    return cmd


def first_key(commands: Sequence[Command]) -> str:
    """A key of the batch's slot, declared so a cluster routes the script there."""
    return str(commands[0][1])
