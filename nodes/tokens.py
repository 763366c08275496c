"""Counting tokens: the model's own tokenizer where there is one, an approximation otherwise.

``ChatOpenAI`` counts with tiktoken (``get_num_tokens_from_messages``). Other models,
and an OpenAI model whose tokenizer file cannot be loaded (no network on first use,
or ``GRAPHWRIGHT_TOKENIZER=approximate``), use langchain-core's character counter
with CJK characters counted as one token each (four characters per token
undercounts Chinese several times over).
"""

from __future__ import annotations

import functools
import logging
import os
import re
from collections.abc import Callable, Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

log = logging.getLogger(__name__)
Counter = Callable[[Sequence[BaseMessage]], int]
CJK = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]")


def approximate(messages: Sequence[BaseMessage]) -> int:
    """langchain-core's estimate, plus three quarters of a token per CJK character."""
    cjk = sum(len(CJK.findall(str(m.content))) for m in messages)
    return count_tokens_approximately(messages) + (3 * cjk + 3) // 4


def token_counter(model: BaseChatModel) -> Counter:
    """How to count the tokens of a request to ``model``."""
    if isinstance(model, ChatOpenAI) and _tiktoken_ready(model.model_name):
        return lambda messages: model.get_num_tokens_from_messages(list(messages))
    return approximate


@functools.cache
def _tiktoken_ready(model_name: str) -> bool:
    """Whether tiktoken can count for this model here (loads its encoding once per process)."""
    if os.environ.get("GRAPHWRIGHT_TOKENIZER", "").lower() == "approximate":
        return False
    try:
        ChatOpenAI(model=model_name, api_key=SecretStr("unused")).get_num_tokens_from_messages([HumanMessage("x")])
    except Exception as exc:  # tiktoken's download or file errors: counting still works, roughly
        log.warning("no tokenizer for %s (%s); counting tokens approximately", model_name, exc)
        return False
    return True
