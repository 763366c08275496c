"""A functional @entrypoint with tasks, as in LangGraph's functional API examples."""

from __future__ import annotations

from typing import Any

from langgraph.func import entrypoint, task


@task
def count_words(text: str) -> int:
    return len(text.split())


@task
def shout(text: str) -> str:
    return text.upper()


@entrypoint()
def workflow(inputs: dict[str, Any]) -> dict[str, Any]:
    words = count_words(inputs["text"]).result()
    loud = shout(inputs["text"]).result()
    return {"words": words, "loud": loud}
