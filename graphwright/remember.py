"""The remember step: explicit preferences and facts from the user's own messages only.

The model is shown nothing but the user's words (never tool output or its own text),
and its structured reply is validated before anything is stored.
"""

from __future__ import annotations

import json
from typing import Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from graphwright.nodes.jsonreply import StructuredReplyError, astructured_reply

REMEMBER_PROMPT = """Extract what the user explicitly asked to be remembered about them.
Only explicit, lasting preferences ("from now on answer in Chinese") and facts about
themselves ("my name is Li"); nothing inferred, nothing about this one task.
Reply with JSON only: {"memories": [{"kind": "preference" | "fact" | "procedure",
"key": "<short snake_case key, e.g. language>", "value": "<value>", "message_id": "<id>"}]}
or {"memories": []}."""


# No docstring: pydantic would send it to the model as the schema's description.
class Candidate(BaseModel):  # noqa: D101
    kind: Literal["preference", "fact", "procedure"]
    key: str = Field(min_length=1, max_length=64, pattern=r"^[a-z][a-z0-9_]*$")
    value: str = Field(min_length=1, max_length=500)
    message_id: str | None = None


# No docstring: pydantic would send it to the model as the schema's description.
class Extraction(BaseModel):  # noqa: D101
    memories: list[Candidate] = Field(default_factory=list, max_length=10)


class ExtractionError(ValueError):
    """The remember step's reply was not a valid extraction; `reply` is what the model said."""

    def __init__(self, message: str, reply: AIMessage | None) -> None:
        super().__init__(message)
        self.reply = reply


async def aextract(
    model: BaseChatModel, user_messages: list[dict[str, str | None]]
) -> tuple[Extraction, AIMessage]:
    """Ask the model; returns the extraction and the raw reply (for the trace and usage).

    Raises:
        ExtractionError: the reply is not a valid extraction, so nothing is stored.
    """
    messages = [
        SystemMessage(REMEMBER_PROMPT),
        HumanMessage(json.dumps(user_messages, ensure_ascii=False)),
    ]
    try:
        return await astructured_reply(model, Extraction, messages, purpose="remember")
    except StructuredReplyError as exc:
        raise ExtractionError(
            f"the remember step's reply was not a valid extraction: {exc}", exc.reply
        ) from exc
