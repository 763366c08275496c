"""Counting tokens: an approximation that needs nothing, or tiktoken when asked for.

The count drives budgets and compaction, not billing (a reply's own usage is used when
the server reports it). By default it is langchain-core's character counter with CJK
characters counted as one token each (four characters per token undercounts Chinese
several times over): it never touches the network. `ChatOpenAI` can count with
tiktoken (`GRAPHWRIGHT_TOKENIZER=tiktoken`), but tiktoken downloads its encoding on
first use, and a local server's model has a tokenizer of its own anyway; so that is
opt-in, for OpenAI's models with the encoding in tiktoken's cache (`TIKTOKEN_CACHE_DIR`).
"""

from __future__ import annotations

import functools
import logging
import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.messages.utils import count_tokens_approximately
from pydantic import SecretStr

if TYPE_CHECKING:
    from langchain_openai import ChatOpenAI

log = logging.getLogger(__name__)
Counter = Callable[[Sequence[BaseMessage]], int]
CJK = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]")


def approximate(messages: Sequence[BaseMessage]) -> int:
    """langchain-core's estimate, plus three quarters of a token per CJK character."""
    cjk = sum(len(CJK.findall(str(m.content))) for m in messages)
    return count_tokens_approximately(messages) + (3 * cjk + 3) // 4


def token_counter(model: BaseChatModel) -> Counter:
    """How to count the tokens of a request to `model`."""
    openai_model = chat_openai(model)
    if openai_model is not None and _tiktoken_ready(openai_model.model_name):
        return lambda messages: openai_model.get_num_tokens_from_messages(list(messages))
    return approximate


def chat_openai(model: object) -> ChatOpenAI | None:
    """`model` as a `ChatOpenAI`, else None, without importing langchain_openai.

    A ChatOpenAI exists only once its module is loaded, and the CLI's inspections stay fast.
    """
    module = sys.modules.get("langchain_openai")
    if module is not None and isinstance(model, module.ChatOpenAI):
        return cast("ChatOpenAI", model)
    return None


@functools.cache
def _tiktoken_ready(model_name: str) -> bool:
    """Whether tiktoken was asked for and can count for this model here.

    It loads its encoding once per process: the only moment it may try to download it.
    """
    if os.environ.get("GRAPHWRIGHT_TOKENIZER", "").lower() != "tiktoken":
        return False
    from langchain_openai import ChatOpenAI  # only asked for a ChatOpenAI, so loaded already

    try:
        ChatOpenAI(model=model_name, api_key=SecretStr("unused")).get_num_tokens_from_messages(
            [HumanMessage("x")]
        )
    except Exception as exc:  # tiktoken's download or file errors: counting still works, roughly
        log.warning("no tokenizer for %s (%s); counting tokens approximately", model_name, exc)
        return False
    return True
