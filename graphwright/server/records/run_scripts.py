"""The Lua scripts that make each run transition one atomic step on Redis.

Every run of a thread is in the thread's `inflight` sorted set (by creation time) from
creation until it ends; the first member is the one allowed to run. All keys but the
queue and the delayed set share the thread's hash tag.
"""

from __future__ import annotations

# The reasons the scripts write into a run's `error` themselves: fixed text, never sealed.
CLEAR_ERRORS = frozenset({b"cancelled by a newer run", b"cancelled before it started"})

# KEYS: record, runs, inflight, registry, queue, delayed (on a cluster, queue and delayed are
# the record again and mode is none: the caller queues apart, as they live on other slots),
# signal (a stream with one entry per run created, its newest kept: thread followers block on it)
# ARGV: run_id, now, strategy, mode (queue|delay|none), due, record-prefix, thread_id,
#       delayed member (as RunStore.member spells it), retention, fields...
# A run executing in the API process is created with mode delay too: its lease is the delayed
# entry, due when the lease runs out, so no run is ever recorded without an owner.
# Returns 'ok' and the pending runs it cancelled (the caller takes them off the delayed
# queue), or 'exists' or 'busy'. A cancelled pending run's record expires like an ended one's.
CREATE = """
local run_id, now, strategy, mode = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]
if redis.call('EXISTS', KEYS[1]) == 1 then return 'exists' end
if strategy == 'reject' and redis.call('ZCARD', KEYS[3]) > 0 then return 'busy' end
local outcome = {'ok'}
if strategy == 'interrupt' or strategy == 'rollback' then
  for _, other in ipairs(redis.call('ZRANGE', KEYS[3], 0, -1)) do
    local rec = ARGV[6] .. other
    local status = redis.call('HGET', rec, 'status')
    if status == 'pending' then
      redis.call('HSET', rec, 'status', 'interrupted', 'error', 'cancelled by a newer run',
                 'updated_at', ARGV[2])
      redis.call('EXPIRE', rec, tonumber(ARGV[9]))
      redis.call('ZREM', KEYS[3], other)
      table.insert(outcome, other)
    elseif status == 'running' then
      redis.call('HSET', rec, 'cancel', strategy)
    else
      redis.call('ZREM', KEYS[3], other)
    end
  end
end
local fields = {}
for i = 10, #ARGV do table.insert(fields, ARGV[i]) end
redis.call('HSET', KEYS[1], unpack(fields))
redis.call('ZADD', KEYS[2], now, run_id)
redis.call('ZADD', KEYS[3], now, run_id)
redis.call('SADD', KEYS[4], KEYS[1], KEYS[2], KEYS[3], KEYS[7])
redis.call('XADD', KEYS[7], 'MAXLEN', 1, '*', 'run_id', run_id)
if mode == 'queue' then
  redis.call('XADD', KEYS[5], '*', 'thread_id', ARGV[7], 'run_id', run_id)
elseif mode == 'delay' then
  redis.call('ZADD', KEYS[6], tonumber(ARGV[5]), ARGV[8])
end
return outcome
"""

# KEYS: record, inflight   ARGV: run_id, owner, now, record-prefix
PICKUP = """
local status = redis.call('HGET', KEYS[1], 'status')
if status ~= 'pending' and status ~= 'running' then return 'gone' end
while true do
  local first = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
  if not first then return 'gone' end
  if first == ARGV[1] then break end
  local other = redis.call('HGET', ARGV[4] .. first, 'status')
  if other == 'pending' or other == 'running' then return 'wait' end
  redis.call('ZREM', KEYS[2], first)  -- ended or deleted without leaving the line
end
redis.call('HSET', KEYS[1], 'status', 'running', 'owner', ARGV[2], 'started', '1',
           'updated_at', ARGV[3])
if status == 'running' then return 'recover' end
return 'start'
"""

# KEYS: record, events   ARGV: owner, event, data, event id
# One owner publishes a run's events one at a time, each waiting for its reply, so a
# publish replayed after a lost reply can only follow itself: the newest entry, with its id.
# Returns the entry id and the cancel action asked for ('' if none), so the executor reads
# the run's signals with the publish; false when the run has another owner.
PUBLISH = """
local record = redis.call('HMGET', KEYS[1], 'owner', 'cancel')
if record[1] ~= ARGV[1] then return false end
local cancel = record[2] or ''
local last = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)[1]
if last then
  local f = last[2]
  for i = 1, #f - 1, 2 do
    if f[i] == 'id' and f[i + 1] == ARGV[4] then return {last[1], cancel} end
  end
end
return {redis.call('XADD', KEYS[2], '*', 'event', ARGV[2], 'data', ARGV[3], 'id', ARGV[4]), cancel}
"""

# Ended runs are kept `retention` seconds: the record and its events expire then, and the
# thread's list and registry forget runs older than that (their keys are gone or going).
# The thread's lock goes in the same step (when ARGV[10] is its holder's value), so a waiter
# woken by the end finds the thread free: its next run never meets the finished one's lock.
# KEYS: record, inflight, events, runs, registry, end, lock
# ARGV: run_id, owner, status, error, now, retention, end-event, record-prefix, events-ttl,
#       lock value ('' to leave the lock alone), '1' to delete the run (a rollback)
FINISH = """
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[2] then return 0 end
if ARGV[10] ~= '' and redis.call('GET', KEYS[7]) == ARGV[10] then redis.call('DEL', KEYS[7]) end
if ARGV[11] == '1' then  -- rolled back: the run goes with its end, before any waiter wakes
  redis.call('DEL', KEYS[1], KEYS[3])
  redis.call('ZREM', KEYS[4], ARGV[1])
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('XADD', KEYS[6], '*', 'status', ARGV[3])
  redis.call('EXPIRE', KEYS[6], tonumber(ARGV[9]))
  return 1
end
local retention = tonumber(ARGV[6])
redis.call('HSET', KEYS[1], 'status', ARGV[3], 'error', ARGV[4], 'updated_at', ARGV[5])
redis.call('HDEL', KEYS[1], 'cancel')
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('XADD', KEYS[3], '*', 'event', ARGV[7], 'data', ARGV[3])
redis.call('EXPIRE', KEYS[3], tonumber(ARGV[9]))
redis.call('XADD', KEYS[6], '*', 'status', ARGV[3])
redis.call('EXPIRE', KEYS[6], tonumber(ARGV[9]))
redis.call('EXPIRE', KEYS[1], retention)
local cutoff = tonumber(ARGV[5]) - retention
for _, old in ipairs(redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', cutoff, 'LIMIT', 0, 100)) do
  if redis.call('ZSCORE', KEYS[2], old) == false then  -- never forget a run still in line
    redis.call('ZREM', KEYS[4], old)
    redis.call('SREM', KEYS[5], ARGV[8] .. old)
  end
end
return 1
"""

# A pending run cancelled expires like an ended one (its delayed entry, on another slot on a
# cluster, is taken away by the caller).
# KEYS: record, inflight, events, end   ARGV: run_id, action, now, ttl, end-event, retention
CANCEL = """
local status = redis.call('HGET', KEYS[1], 'status')
if status == 'pending' then
  redis.call('HSET', KEYS[1], 'status', 'interrupted', 'error', 'cancelled before it started',
             'updated_at', ARGV[3])
  redis.call('EXPIRE', KEYS[1], tonumber(ARGV[6]))
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('XADD', KEYS[3], '*', 'event', ARGV[5], 'data', 'interrupted')
  redis.call('EXPIRE', KEYS[3], tonumber(ARGV[4]))
  redis.call('XADD', KEYS[4], '*', 'status', 'interrupted')
  redis.call('EXPIRE', KEYS[4], tonumber(ARGV[4]))
  return 'cancelled'
elseif status == 'running' then
  redis.call('HSET', KEYS[1], 'cancel', ARGV[2])
  return 'signalled'
end
return status or 'gone'
"""

# KEYS: delayed, queue   ARGV: now
RELEASE_DUE = """
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, 50)
for _, item in ipairs(due) do
  local pair = cjson.decode(item)
  redis.call('ZREM', KEYS[1], item)
  redis.call('XADD', KEYS[2], '*', 'thread_id', pair[1], 'run_id', pair[2])
end
return #due
"""

# Entries before the first one the group still needs (unread, or read and not acknowledged)
# are done with: trimming them bounds the queue and never drops a run.
# KEYS: queue   ARGV: group
TRIM = """
local function before(a, b)
  local am, as = string.match(a, '(%d+)-(%d+)')
  local bm, bs = string.match(b, '(%d+)-(%d+)')
  if tonumber(am) ~= tonumber(bm) then return tonumber(am) < tonumber(bm) end
  return tonumber(as) < tonumber(bs)
end
local floor = nil
for _, group in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
  for i = 1, #group, 2 do
    if group[i] == 'name' and group[i + 1] == ARGV[1] then
      for j = 1, #group, 2 do
        if group[j] == 'last-delivered-id' then floor = group[j + 1] end
      end
    end
  end
end
if not floor then return 0 end
local oldest = redis.call('XPENDING', KEYS[1], ARGV[1])[2]
local keep = redis.call('XRANGE', KEYS[1], '(' .. floor, '+', 'COUNT', 1)[1]
local bound = keep and keep[1] or nil
if oldest and (not bound or before(oldest, bound)) then bound = oldest end
if not bound then  -- everything delivered and acknowledged
  return redis.call('XTRIM', KEYS[1], 'MAXLEN', 0)
end
return redis.call('XTRIM', KEYS[1], 'MINID', bound)
"""

# On a cluster, where the queue is another slot: the one who pushes a due entry's time on
# (by the claim window) queues it.  KEYS: delayed   ARGV: item, now, later
CLAIM_DUE = """
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score or tonumber(score) > tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], tonumber(ARGV[3]), ARGV[1])
return 1
"""

# KEYS: queue   ARGV: group, entry_id, consumer
HEARTBEAT = """
local entry = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[2], ARGV[2], 1)[1]
if not entry or entry[2] ~= ARGV[3] then return 0 end
redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[3], 0, ARGV[2], 'JUSTID')
return 1
"""

# A stopping worker hands a run back: the executor still on it sees another owner at its
# next check and stops writing; the next pickup recovers it.  KEYS: record   ARGV: owner
DISOWN = """
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'owner', '')
return 1
"""
