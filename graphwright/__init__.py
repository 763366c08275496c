"""graphwright: workflow-graph agents on LangGraph, checkpointed to Redis.

Every public name loads on first use (module `__getattr__`), so `import graphwright`
and the CLI's `--help` do not pay for LangGraph, a model client or the server.
`tests/cli/test_startup.py` pins what the import loads.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from graphwright_errors import ConfigurationError, GraphwrightError, InfrastructureError, UserError

if TYPE_CHECKING:
    from graphwright.checkpoints.errors import CorruptCheckpointError, RedisUnavailableError
    from graphwright.checkpoints.redis import AsyncRedisSaver, RedisSaver
    from graphwright.graphs.registry import GraphContext, GraphRegistry, RunInput
    from graphwright.locking import ThreadBusyError
    from graphwright.nodes.deps import Limits
    from graphwright.nodes.gate_models import Approve, Edit, GateDecisionError, GateRequest, Reject
    from graphwright.orchestrator import Orchestrator
    from graphwright.results import (
        CheckpointInfo,
        RunResult,
        StepEvent,
        ThreadInfo,
        ThreadState,
        Usage,
    )
    from graphwright.settings import Settings

_LAZY = {
    "AsyncRedisSaver": "graphwright.checkpoints.redis",
    "CorruptCheckpointError": "graphwright.checkpoints.errors",
    "RedisSaver": "graphwright.checkpoints.redis",
    "RedisUnavailableError": "graphwright.checkpoints.errors",
    "GraphContext": "graphwright.graphs.registry",
    "GraphRegistry": "graphwright.graphs.registry",
    "RunInput": "graphwright.graphs.registry",
    "ThreadBusyError": "graphwright.locking",
    "Orchestrator": "graphwright.orchestrator",
    "CheckpointInfo": "graphwright.results",
    "RunResult": "graphwright.results",
    "StepEvent": "graphwright.results",
    "ThreadInfo": "graphwright.results",
    "ThreadState": "graphwright.results",
    "Usage": "graphwright.results",
    "Settings": "graphwright.settings",
    "Limits": "graphwright.nodes.deps",
    "Approve": "graphwright.nodes.gate_models",
    "Edit": "graphwright.nodes.gate_models",
    "GateDecisionError": "graphwright.nodes.gate_models",
    "GateRequest": "graphwright.nodes.gate_models",
    "Reject": "graphwright.nodes.gate_models",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(_LAZY[name]), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "Approve",
    "AsyncRedisSaver",
    "CheckpointInfo",
    "ConfigurationError",
    "CorruptCheckpointError",
    "Edit",
    "GateDecisionError",
    "GateRequest",
    "GraphContext",
    "GraphRegistry",
    "GraphwrightError",
    "InfrastructureError",
    "Limits",
    "Orchestrator",
    "RedisSaver",
    "RedisUnavailableError",
    "Reject",
    "RunInput",
    "RunResult",
    "Settings",
    "StepEvent",
    "ThreadBusyError",
    "ThreadInfo",
    "ThreadState",
    "Usage",
    "UserError",
]
