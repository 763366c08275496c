"""The saver's server-side scripts: fenced writes, the latest-checkpoint read, rare ops.

A `put` or `put_writes` that carries a fencing token is one script call: the
token check and the write are atomic. Without a token they are plain pipelined
commands (a script call costs the server several times more than the commands it
runs). Either way the server work does not depend on how long the thread is: a fixed
set of keys, a few O(log n) commands, no walk over the thread. A thread's members are
`ns NUL checkpoint NUL ...` in sorted sets of equal scores, so every range below is
lexical: `[p` .. `(p'` where `p'` is `p` with its final NUL turned into 0x01
selects exactly the members that start with `p`.

Scripts are sent once as their SHA1 and loaded on NOSCRIPT (see the savers' senders).
A stale fencing token is refused with an error reply starting `GWLOCKLOST`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

LOCK_LOST = "GWLOCKLOST"

_FENCE = """
local function fenced(key, token)
  if token ~= '' and redis.call('GET', key) ~= token then
    return redis.error_reply('GWLOCKLOST fencing token ' .. token .. ' is no longer current')
  end
end
local function upper(p) return '(' .. string.sub(p, 1, -2) .. '\\1' end
"""

# KEYS: cp, blobs, rids, fence, indexed, ttl keys..., [threads, thread_ids, run index]
# ARGV: prefix, member, token, run_id, ttl, n_ttl_keys, globals?, now_ms, thread, fields...
# Flags say which index entries are not written yet (1 thread, 2 run), read from the
# `indexed` marker rather than from what this call added: a replay after a lost reply
# still reports (and, with globals, writes) them.
PUT = (
    _FENCE
    + """
local err = fenced(KEYS[4], ARGV[3])
if err then return err end
local flags = 0
if redis.call('HEXISTS', KEYS[5], 'thread') == 0 then flags = 1 end
redis.call('ZREMRANGEBYLEX', KEYS[1], '[' .. ARGV[1], upper(ARGV[1]))
redis.call('ZADD', KEYS[1], 0, ARGV[2])
if #ARGV > 9 then redis.call('HSET', KEYS[2], unpack(ARGV, 10)) end
if ARGV[4] ~= '' then
  redis.call('SADD', KEYS[3], ARGV[4])
  if redis.call('HEXISTS', KEYS[5], 'run:' .. ARGV[4]) == 0 then flags = flags + 2 end
end
local nt = tonumber(ARGV[6])
if ARGV[7] == '1' then
  local g = 5 + nt
  if flags % 2 == 1 then
    redis.call('ZADD', KEYS[g + 1], 'NX', ARGV[8], ARGV[9])
    redis.call('ZADD', KEYS[g + 2], 0, ARGV[9])
    redis.call('HSET', KEYS[5], 'thread', 1)
  end
  if flags >= 2 then
    redis.call('SADD', KEYS[g + 3], ARGV[9])
    redis.call('HSET', KEYS[5], 'run:' .. ARGV[4], 1)
  end
end
if ARGV[5] ~= '' then
  for i = 6, 5 + nt do redis.call('EXPIRE', KEYS[i], ARGV[5]) end
end
return flags
"""
)

# KEYS: writes, write index, fence.  ARGV: token, ttl, then (replace?, field, write)...
# A regular write is kept once per (task, idx): the first one stays. Special channels
# (error, interrupt, resume; negative idx) are replaced, as LangGraph expects.
PUT_WRITES = (
    _FENCE
    + """
local err = fenced(KEYS[3], ARGV[1])
if err then return err end
local index = {}
for i = 3, #ARGV, 3 do
  redis.call(ARGV[i] == '1' and 'HSET' or 'HSETNX', KEYS[1], ARGV[i + 1], ARGV[i + 2])
  index[#index + 1] = 0
  index[#index + 1] = ARGV[i + 1]
end
redis.call('ZADD', KEYS[2], unpack(index))
if ARGV[2] ~= '' then
  redis.call('EXPIRE', KEYS[1], ARGV[2])
  redis.call('EXPIRE', KEYS[2], ARGV[2])
end
return #index / 2
"""
)

# KEYS: cp, writes, write index, layout-1 namespaces.  ARGV: ns prefix, id ('' = latest)
# Returns {member, write fields, writes} or {false, layout-1 data exists?}.
READ = (
    _FENCE
    + """
local p = ARGV[1]
local m
if ARGV[2] == '' then
  m = redis.call('ZREVRANGEBYLEX', KEYS[1], upper(p), '[' .. p, 'LIMIT', 0, 1)[1]
else
  local c = p .. ARGV[2] .. '\\0'
  m = redis.call('ZRANGEBYLEX', KEYS[1], '[' .. c, upper(c), 'LIMIT', 0, 1)[1]
end
if not m then return {false, redis.call('EXISTS', KEYS[4])} end
local c = string.sub(m, 1, string.find(m, '\\0', #p + 1, true))
local fields = redis.call('ZRANGEBYLEX', KEYS[3], '[' .. c, upper(c))
local writes = {}
if #fields > 0 then writes = redis.call('HMGET', KEYS[2], unpack(fields)) end
return {m, fields, writes}
"""
)

# KEYS: cp.  The escaped namespaces of the thread, skipping from one to the next.
NAMESPACES = """
local out, lo = {}, '-'
while true do
  local m = redis.call('ZRANGEBYLEX', KEYS[1], lo, '+', 'LIMIT', 0, 1)[1]
  if not m then return out end
  local ns = string.sub(m, 1, string.find(m, '\\0', 1, true) - 1)
  out[#out + 1] = ns
  lo = '(' .. ns .. '\\1'
end
"""

# KEYS: registry, the saver's keys..., [threads, thread_ids].  ARGV: thread, n_own, globals?
DELETE_THREAD = """
local members = redis.call('SMEMBERS', KEYS[1])
for i = 1, #members, 4000 do
  redis.call('DEL', unpack(members, i, math.min(i + 3999, #members)))
end
local n = tonumber(ARGV[2])
redis.call('DEL', unpack(KEYS, 1, n))
if ARGV[3] == '1' then
  redis.call('ZREM', KEYS[n + 1], ARGV[1])
  redis.call('ZREM', KEYS[n + 2], ARGV[1])
end
return #members
"""

# ARGV is a flat list: argc, command, args..., argc, command, args...  (rare, large
# operations: prune, delete_for_runs, copy_thread, migration). KEYS[1] routes it.
RUN = """
local i, n = 1, #ARGV
while i <= n do
  local argc = tonumber(ARGV[i])
  redis.call(unpack(ARGV, i + 1, i + argc))
  i = i + argc + 1
end
return n
"""


@dataclass(frozen=True)
class Script:
    """A Lua script by name, loaded by its SHA so each call sends only the hash."""

    name: str
    body: str

    @property
    def sha(self) -> str:
        return hashlib.sha1(self.body.encode()).hexdigest()


SCRIPTS = {
    s.name: s
    for s in (
        Script("put", PUT),
        Script("put_writes", PUT_WRITES),
        Script("read", READ),
        Script("namespaces", NAMESPACES),
        Script("delete_thread", DELETE_THREAD),
        Script("run", RUN),
    )
}
SHAS = {name: s.sha for name, s in SCRIPTS.items()}
