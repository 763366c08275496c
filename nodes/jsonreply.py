"""Structured replies: JSON-schema output where the model supports it, else validated JSON text.

`ChatOpenAI` is asked with `with_structured_output(schema, method="json_schema")`;
a server that refuses `response_format` (HTTP 400) is remembered and asked again
the older way. Every other model gets the prompt's "reply with JSON" and its text is
parsed and validated against the same pydantic schema. Structured calls are tagged
`nostream`: their JSON is not the answer, so token streams leave it out.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig
from pydantic import BaseModel, ValidationError

from graphwright.nodes.purpose import Purpose, purpose_config
from graphwright.nodes.tokens import chat_openai
from graphwright.nodes.tracing import as_ai

log = logging.getLogger(__name__)
T = TypeVar("T", bound=BaseModel)
NOSTREAM: RunnableConfig = {
    "tags": ["nostream"]
}  # LangGraph's messages stream skips runs with this tag
_refused: set[tuple[str, str]] = set()  # (base URL, model) that answered 400 to json_schema


class StructuredReplyError(ValueError):
    """The model's reply is not a valid instance of the schema; `reply` is what it said."""

    def __init__(self, message: str, reply: AIMessage | None) -> None:
        super().__init__(message)
        self.reply = reply


def parse_json_reply(text: str) -> Any:
    """The JSON value in `text`; raises `ValueError` (`json.JSONDecodeError`) if there is none."""
    body = text.strip()
    if body.startswith("```"):
        body = body.strip("`").removeprefix("json").strip()
    return json.loads(body)


def text_of(message: AIMessage) -> str:
    """The plain text of a model reply (content may be a list of parts)."""
    if isinstance(message.content, str):
        return message.content
    return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in message.content)


def structured_reply(
    model: BaseChatModel,
    schema: type[T],
    messages: Sequence[BaseMessage],
    config: RunnableConfig | None = None,
    *,
    purpose: Purpose | None = None,
) -> tuple[T, AIMessage]:
    """One model call whose reply is validated as `schema`.

    Returns it with the raw reply. `purpose` is sent with the call (see
    `graphwright.nodes.purpose`).

    Raises:
        StructuredReplyError: the reply is not valid JSON for `schema`.
    """
    key, call, bound = _asking(model, schema, purpose)
    if bound is not None:
        import openai  # loaded with the ChatOpenAI that is asked

        try:
            out = bound.with_config(call).invoke(list(messages), config)
        except openai.BadRequestError as exc:
            _refuse(key, exc)
        else:
            return _validated(schema, out)
    raw = as_ai(model.with_config(call).invoke(list(messages), config))
    return parse_as(schema, raw)


async def astructured_reply(
    model: BaseChatModel,
    schema: type[T],
    messages: Sequence[BaseMessage],
    config: RunnableConfig | None = None,
    *,
    purpose: Purpose | None = None,
) -> tuple[T, AIMessage]:
    """`structured_reply` awaited: the model's own async call, on the caller's loop."""
    key, call, bound = _asking(model, schema, purpose)
    if bound is not None:
        import openai

        try:
            out = await bound.with_config(call).ainvoke(list(messages), config)
        except openai.BadRequestError as exc:
            _refuse(key, exc)
        else:
            return _validated(schema, out)
    raw = as_ai(await model.with_config(call).ainvoke(list(messages), config))
    return parse_as(schema, raw)


def _asking(
    model: BaseChatModel, schema: type[BaseModel], purpose: Purpose | None
) -> tuple[tuple[str, str], RunnableConfig, Runnable[Any, Any] | None]:
    """The model's key, the call's config, and the JSON-schema-bound model (None: ask for text).

    A JSON schema (not the class): a reply that is not valid JSON comes back as a parsing
    error with the raw reply, instead of an exception inside the client.
    """
    key = _key(model)
    call: RunnableConfig = {**NOSTREAM, **(purpose_config(purpose) if purpose else {})}
    openai_model = chat_openai(model)
    if openai_model is None or key in _refused:
        return key, call, None
    bound = openai_model.with_structured_output(
        schema.model_json_schema(), method="json_schema", include_raw=True
    )
    return key, call, bound


def _refuse(key: tuple[str, str], exc: Exception) -> None:
    """Remember a server that refused JSON-schema output (else the error is not ours)."""
    if "response_format" not in str(exc) and "json_schema" not in str(exc):
        raise exc
    log.warning("%s refused json_schema output (%s); parsing JSON text instead", key, exc)
    _refused.add(key)


def _validated(schema: type[T], out: dict[str, Any]) -> tuple[T, AIMessage]:
    """The bound model's answer (raw reply and parsed JSON) as `schema`."""
    raw = as_ai(out["raw"])
    if isinstance(out.get("parsed"), dict):
        try:
            return schema.model_validate(out["parsed"]), raw
        except ValidationError as exc:
            raise StructuredReplyError(
                f"not a valid {schema.__name__}: {str(exc)[:300]}", raw
            ) from exc
    return parse_as(schema, raw)


def parse_as(schema: type[T], reply: AIMessage) -> tuple[T, AIMessage]:
    """Today's fallback: the reply's text parsed as JSON and validated."""
    try:
        return schema.model_validate(parse_json_reply(text_of(reply))), reply
    except (ValueError, ValidationError) as exc:
        raise StructuredReplyError(
            f"not a valid {schema.__name__}: {str(exc)[:300]}", reply
        ) from exc


def _key(model: BaseChatModel) -> tuple[str, str]:
    if (openai_model := chat_openai(model)) is not None:
        return (str(openai_model.openai_api_base or ""), openai_model.model_name)
    return ("", type(model).__name__)
