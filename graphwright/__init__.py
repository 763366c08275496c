"""graphwright: workflow-graph agents on LangGraph, checkpointed to Redis."""

from checkpoints.errors import CorruptCheckpointError, RedisUnavailableError
from checkpoints.redis import AsyncRedisSaver, RedisSaver
from graphs.registry import GraphContext, GraphRegistry, RunInput
from graphwright.locking import ThreadBusyError
from graphwright.orchestrator import Orchestrator
from graphwright.results import CheckpointInfo, RunResult, StepEvent, ThreadInfo, ThreadState, Usage
from graphwright.settings import Settings
from graphwright_errors import ConfigurationError, GraphwrightError, InfrastructureError, UserError
from nodes.deps import Limits
from nodes.gate_models import Approve, Edit, GateDecisionError, GateRequest, Reject

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
