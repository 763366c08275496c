"""Why a model call is made, sent with the call as run metadata.

Every model call graphwright makes names its purpose (`with_purpose(model, "compact")`),
so whatever sits behind the model interface (the offline model, a tracer, a router) tells
the calls apart by that name instead of by the wording of their prompts. The metadata
travels in the LangChain run config, not to the provider's API.
"""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.runnables import Runnable, RunnableConfig

PURPOSE_KEY = "graphwright_purpose"
Purpose = Literal[
    "plan",  # an agent turn: answer or call tools
    "compact",  # the handoff record of a folded conversation
    "split",  # the orchestrator splits the task across workers
    "synthesize",  # the orchestrator writes the answer from the workers' results
    "extract_order",  # order support: the order id in the customer's message
    "phrase",  # order support: the answer phrased from facts
    "remember",  # what the user asked to be remembered
]


def purpose_config(purpose: Purpose) -> RunnableConfig:
    """The run config that names `purpose` (merged into any config of the call)."""
    return {"metadata": {PURPOSE_KEY: purpose}}


def with_purpose(model: Runnable[Any, Any], purpose: Purpose) -> Runnable[Any, Any]:
    """`model` whose every call carries `purpose`."""
    return model.with_config(purpose_config(purpose))


def purpose_of(metadata: dict[str, Any] | None) -> str | None:
    """The purpose a call's run metadata names, if any."""
    value = (metadata or {}).get(PURPOSE_KEY)
    return str(value) if value is not None else None
