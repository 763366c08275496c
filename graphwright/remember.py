"""The remember step: explicit preferences and facts from the user's own messages only.

The model is shown nothing but the user's words (never tool output or its own text),
and its structured reply is validated before anything is stored.
"""

from __future__ import annotations

import json
from typing import Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field, ValidationError

from nodes.jsonreply import parse_json_reply, text_of
from nodes.tracing import as_ai

REMEMBER_PROMPT = """Extract what the user explicitly asked to be remembered about them.
Only explicit, lasting preferences ("from now on answer in Chinese") and facts about
themselves ("my name is Li"); nothing inferred, nothing about this one task.
Reply with JSON only: {"memories": [{"kind": "preference" | "fact" | "procedure",
"key": "<short snake_case key, e.g. language>", "value": "<value>", "message_id": "<id>"}]}
or {"memories": []}."""


class Candidate(BaseModel):
    kind: Literal["preference", "fact", "procedure"]
    key: str = Field(min_length=1, max_length=64, pattern=r"^[a-z][a-z0-9_]*$")
    value: str = Field(min_length=1, max_length=500)
    message_id: str | None = None


class Extraction(BaseModel):
    memories: list[Candidate] = Field(default_factory=list, max_length=10)


def extract(model: BaseChatModel, user_messages: list[dict[str, str | None]]) -> Extraction:
    """Ask the model; a reply that is not a valid extraction stores nothing (raises ValueError)."""
    reply = as_ai(model.invoke([SystemMessage(REMEMBER_PROMPT),
                                HumanMessage(json.dumps(user_messages, ensure_ascii=False))]))
    try:
        return Extraction.model_validate(parse_json_reply(text_of(reply)))
    except (ValueError, ValidationError) as exc:
        raise ValueError(f"the remember step's reply was not a valid extraction: {exc}") from exc
