"""`ChatOpenAI` as graphwright builds it for `OPENAI_BASE_URL`.

Requests every OpenAI-compatible server takes (llama.cpp's, vLLM, Ollama), not only OpenAI's own.
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import LanguageModelInput
from langchain_openai import ChatOpenAI


class CompatChatOpenAI(ChatOpenAI):
    """An assistant message with tool calls and no text goes out with `content: ""`.

    langchain-openai sends `null` there, which OpenAI documents and llama.cpp's server
    refuses (HTTP 500); an empty string is read the same way by OpenAI, vLLM and Ollama.
    `null_content=True` (`GRAPHWRIGHT_OPENAI_NULL_CONTENT`) sends `null` again.

    The reply's token cap goes out as `max_tokens` when `legacy_max_tokens` is set (a
    compatible server: llama.cpp's reads no other name); langchain-openai sends OpenAI's
    newer `max_completion_tokens`, which such servers ignore.
    """

    null_content: bool = False
    legacy_max_tokens: bool = False

    def _get_request_payload(
        self, input_: LanguageModelInput, *, stop: list[str] | None = None, **kwargs: Any
    ) -> dict[str, Any]:
        payload: dict[str, Any] = super()._get_request_payload(input_, stop=stop, **kwargs)
        if self.legacy_max_tokens and "max_completion_tokens" in payload:
            payload["max_tokens"] = payload.pop("max_completion_tokens")
        if not self.null_content:
            for message in payload.get("messages") or []:
                if message.get("role") == "assistant" and message.get("content") is None:
                    message["content"] = ""
        return payload
