"""Turn a batch of the operations' commands into what goes on the wire.

Script pseudo-commands become EVALSHA (the savers load the scripts when a server
answers NOSCRIPT). An
atomic batch of several commands becomes one call of the generic `run` script: the
client packs one command and parses one reply, where MULTI/EXEC costs a reply per
queued command. Both are one round trip and neither rolls back, so they are
interchangeable; very large batches (beyond Lua's stack for `unpack`) fall back to
MULTI/EXEC.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from graphwright.checkpoints.ops import SCRIPT, Batch, Command, script
from graphwright.checkpoints.scripts import SCRIPTS, SHAS

MAX_SCRIPT_ARGS = 7000  # Lua's unpack() stack limit is near 8000 values


def wire(cmd: Command) -> Command:
    """The command as sent once the server has the scripts."""
    if cmd[0] == SCRIPT:
        return ("EVALSHA", SHAS[cmd[1]], *cmd[2:])
    return cmd


def script_bodies() -> list[str]:
    """What to load on a server that answered NOSCRIPT."""
    return [s.body for s in SCRIPTS.values()]


def pack(commands: Sequence[Command]) -> Command | None:
    """Commands as one call of the `run` script, or None when too large for it."""
    flat: list[Any] = []
    for cmd in commands:
        if len(cmd) > MAX_SCRIPT_ARGS or cmd[0] == SCRIPT:
            return None
        flat.append(len(cmd))
        flat.extend(cmd)
    return script("run", (str(commands[0][1]),), flat)


def plan(batch: Batch) -> tuple[list[Command], bool, int]:
    """`(commands, as a transaction?, replies to fake)`.

    A packed atomic batch answers with one reply for the script, so its callers get `None` per
    command instead.
    """
    cmds = batch.commands
    if not batch.atomic or len(cmds) < 2:
        return cmds, False, 0
    packed = pack(cmds)
    if packed is None:
        return cmds, True, 0
    return [packed], False, len(cmds)
