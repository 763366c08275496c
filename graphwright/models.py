"""Pick the chat model: ChatOpenAI when an OpenAI key or compatible URL is set, else offline."""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel
from pydantic import SecretStr

from graphwright.offline import OfflineChatModel
from graphwright.settings import Settings


def make_model(settings: Settings) -> BaseChatModel:
    """`ChatOpenAI` (timeout set, requests any compatible server takes) or the offline model."""
    if not (settings.openai_api_key or settings.openai_base_url):
        return OfflineChatModel()
    # The client only when a run is to use it.
    from graphwright.openai_compat import CompatChatOpenAI

    # A local OpenAI-compatible server (vLLM, Ollama) often needs no key; the client wants one.
    key = settings.openai_api_key or SecretStr("not-needed")
    return CompatChatOpenAI(
        model=settings.openai_model,
        api_key=key,
        base_url=settings.openai_base_url,
        timeout=settings.openai_timeout_s,
        # graphwright retries (Limits.model_retries, from OPENAI_MAX_RETRIES) within the
        # run's deadline; the client retrying too would multiply the attempts past it.
        max_retries=0,
        temperature=0,
        max_completion_tokens=settings.openai_max_tokens,  # the field max_tokens, by its alias
        legacy_max_tokens=settings.openai_base_url is not None,  # a compatible server
        stream_usage=True,  # token usage on streamed replies too (stream_options.include_usage)
        null_content=settings.openai_null_content,
    )
