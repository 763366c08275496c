"""Pick the chat model: ChatOpenAI when an OpenAI key or compatible URL is set, else offline."""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel
from pydantic import SecretStr

from graphwright.offline import OfflineChatModel
from graphwright.settings import Settings


def make_model(settings: Settings) -> BaseChatModel:
    """``ChatOpenAI`` (timeouts and retries set) or the deterministic offline model."""
    if not (settings.openai_api_key or settings.openai_base_url):
        return OfflineChatModel()
    from langchain_openai import ChatOpenAI  # the client only when a run is to use it

    # A local OpenAI-compatible server (vLLM, Ollama) often needs no key; the client wants one.
    key = settings.openai_api_key or SecretStr("not-needed")
    return ChatOpenAI(
        model=settings.openai_model,
        api_key=key,
        base_url=settings.openai_base_url,
        timeout=settings.openai_timeout_s,
        max_retries=settings.openai_max_retries,
        temperature=0,
        stream_usage=True,  # token usage on streamed replies too (stream_options.include_usage)
    )
