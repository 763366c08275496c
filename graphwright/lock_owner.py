"""Who holds a thread's lock, and whether that holder is provably gone.

A lock left by a dead process is taken over at once instead of waiting for the expiry,
but only when the holder is provably gone: same host, same boot, same PID namespace,
and its PID is unused or now belongs to a process that started at another time.
Anything less certain waits for the expiry.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

# The owner ids of the locks this process holds or is taking now. A lock of this process's
# whose id is not here was left behind (its release failed while Redis was away): it is
# stale at once. An id is added before its lock is taken and dropped after it is given
# back, so a run of this process never reads another's live lock as left behind.
_LIVE: set[str] = set()


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _start_time(pid: int) -> str | None:
    """When the process started, in clock ticks since boot (Linux), or None."""
    stat = _read(f"/proc/{pid}/stat")
    if stat is None:
        return None
    fields = stat.rsplit(")", 1)[-1].split()  # proc(5) fields from the third on
    if fields[0] in ("Z", "X"):
        return None  # dead, only not reaped yet
    return fields[19]  # field 22: start time


def _pid_namespace() -> str | None:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return None


_IDENTITY: dict[int, dict[str, Any]] = {}  # by PID: a forked child is another holder


def identity() -> dict[str, Any]:
    """Who holds a lock: enough to tell, on the same machine, whether it is still alive.

    Read from /proc once per process (none of it changes while the process lives).
    """
    pid = os.getpid()
    if pid not in _IDENTITY:
        _IDENTITY[pid] = {
            "host": socket.gethostname(),
            "boot": _read("/proc/sys/kernel/random/boot_id"),
            "pidns": _pid_namespace(),
            "pid": pid,
            "start": _start_time(pid),
        }
    return dict(_IDENTITY[pid])


def _stale(raw: bytes | str | None) -> bool:
    """True when the lock is free, or its holder provably died on this machine."""
    if raw is None:
        return True
    try:
        owner = json.loads(raw)
    except ValueError:
        return False
    me = identity()
    same_machine = all(
        owner.get(k) == me[k] and me[k] is not None for k in ("host", "boot", "pidns")
    )
    if not same_machine or owner.get("start") is None:
        return False  # cannot tell: wait for the expiry
    if owner.get("pid") == me["pid"] and owner["start"] == me["start"]:
        return owner.get("id") not in _LIVE  # ours, and no run of ours holds it any more
    return bool(_start_time(int(owner.get("pid", 0))) != owner["start"])


def lock_id(value: str) -> str | None:
    """The owner id a lock value carries."""
    try:
        got = json.loads(value).get("id")
    except (ValueError, AttributeError):
        return None
    return str(got) if got is not None else None
