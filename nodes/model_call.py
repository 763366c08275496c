"""One model call as a node makes it.

Retried with backoff where that is safe, each attempt's timeout capped by the run's remaining
deadline, and a provider's failure raised as one `ModelError` line that names it.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    wait_exponential,
    wait_random,
)

from graphwright.nodes.tokens import chat_openai
from graphwright.nodes.tracing import as_ai
from graphwright_errors import ModelError

# Statuses a server answers for a moment: overloaded, rate limited, failing. A 4xx other
# than these says the request itself is wrong: sending it again gets the same answer.
TRANSIENT_STATUS = frozenset({408, 409, 429})
MIN_ATTEMPT_S = 1.0  # an attempt with less time than this left is not started


@dataclass(frozen=True, kw_only=True)
class ModelCall:
    """How a node calls the model.

    The retries and the backoff. Graph builders set `retries` from `Limits.model_retries`
    (`OPENAI_MAX_RETRIES`).
    """

    retries: int = 2  # attempts after the first, for transient failures only
    backoff_s: float = 0.5  # the first wait; doubled per attempt, jittered
    max_backoff_s: float = 8.0
    sleep: Callable[[float], None] = field(default=time.sleep)  # tests record the waits


class EmptyReply(Exception):
    """The server answered 200 with nothing in it: no choice, no chunk."""


def provider_error(exc: BaseException) -> BaseException | None:
    """The OpenAI client's own error behind `exc` (langchain-openai wraps it), if any.

    The `openai` module is looked up, not imported: a process that never loaded it has
    made no OpenAI call to fail.
    """
    openai = sys.modules.get("openai")
    found: BaseException | None = None
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, EmptyReply) or (
            openai is not None and isinstance(seen, openai.APIError)
        ):
            found = seen  # the innermost one is the client's, not a wrapper's
        seen = seen.__cause__ or seen.__context__
    return found


def empty_reply(exc: BaseException) -> bool:
    """How langchain-openai fails on a 200 with no choices.

    "No generations found in stream", or an IndexError reading `choices[0]` of a plain reply.
    """
    return (isinstance(exc, ValueError) and "No generations found" in str(exc)) or isinstance(
        exc, IndexError
    )


def transient(exc: BaseException) -> bool:
    """Worth another attempt.

    A timeout, a lost connection, a 5xx or 429, an empty reply. Only the OpenAI client's errors are
    known here; another provider's pass through.
    """
    found = provider_error(exc)
    if found is None:
        return False
    status = getattr(found, "status_code", None)
    if status is None:  # no answer at all: a timeout, a refused or dropped connection
        return True
    return int(status) >= 500 or int(status) in TRANSIENT_STATUS


def describe(exc: BaseException) -> str:
    """The provider's error in one line: its status and its own message."""
    found = provider_error(exc) or exc
    status = getattr(found, "status_code", None)
    body = getattr(found, "body", None)
    message = body.get("message") if isinstance(body, dict) else None
    text = " ".join(str(message or getattr(found, "message", None) or found).split())
    if status is not None:
        return f"HTTP {status}: {text}"
    return f"{type(found).__name__}: {text}"


def provider_of(model: BaseChatModel) -> str:
    """Which model at which server, for the error line."""
    openai_model = chat_openai(model)
    if openai_model is None:
        return type(model).__name__
    return f"{openai_model.model_name} at {openai_model.openai_api_base or 'the OpenAI API'}"


def attempt_timeout(model: BaseChatModel, remaining: float) -> float | None:
    """The client's own timeout, cut to the time the run has left; None keeps the client's."""
    openai_model = chat_openai(model)
    if openai_model is None or math.isinf(remaining):
        return None
    left = max(remaining, MIN_ATTEMPT_S)  # the first attempt is made even on the wire
    own = openai_model.request_timeout
    return min(float(own), left) if isinstance(own, int | float) else left


def invoke_model(
    model: BaseChatModel,
    runnable: Runnable[LanguageModelInput, BaseMessage],
    messages: Sequence[BaseMessage],
    config: RunnableConfig,
    *,
    how: ModelCall,
    clock: Callable[[], float] = time.monotonic,
    deadline: float = math.inf,
) -> AIMessage:
    """`runnable` (`model`, maybe with tools bound) called on `messages`.

    A model call has no effect outside the provider, so a transient failure is retried;
    a mid-stream failure re-streams the reply from its start. `deadline` is a moment
    of `clock`: no attempt starts or waits past it, and each one's timeout ends there.
    """

    def stop(state: RetryCallState) -> bool:
        left = deadline - clock() - (state.upcoming_sleep or 0.0)
        return state.attempt_number > how.retries or left < MIN_ATTEMPT_S

    def once() -> AIMessage:
        timeout = attempt_timeout(model, deadline - clock())
        kwargs: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
        try:
            return as_ai(runnable.invoke(list(messages), config, **kwargs))
        except (ValueError, IndexError) as exc:
            if empty_reply(exc):
                raise EmptyReply("the server sent an empty reply (no choices)") from exc
            raise

    retrying = Retrying(
        stop=stop,
        retry=retry_if_exception(transient),
        sleep=how.sleep,
        reraise=True,
        wait=wait_exponential(multiplier=how.backoff_s, max=how.max_backoff_s)
        + wait_random(0, how.backoff_s),
    )
    try:
        return retrying(once)
    except Exception as exc:
        if provider_error(exc) is None:
            raise  # a bug of ours or of a library: not the provider's to answer for
        tries = retrying.statistics.get("attempt_number", 1)
        raise ModelError(
            f"the model call failed ({provider_of(model)}, {tries} "
            f"attempt{'s' if tries != 1 else ''}): {describe(exc)}"
        ) from exc
