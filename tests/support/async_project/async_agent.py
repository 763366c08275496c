"""A LangChain agent with an async tool and async middleware, as LangChain v1 writes them."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI


def _append(line: str) -> None:
    with (Path(os.environ["NOTES_DIR"]) / "effects.txt").open("a", encoding="utf-8") as out:
        out.write(line + "\n")


@tool
async def add_note(text: str) -> str:
    """Add a line to the user's notes."""
    await asyncio.to_thread(_append, f"note:{text}")
    return f"noted {text}"


class Counted(AgentMiddleware):  # type: ignore[type-arg]
    """Async hooks only: each model call is counted in the effects file."""

    async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        await asyncio.to_thread(_append, "before_model")
        return None


agent = create_agent(
    ChatOpenAI(model="gpt-4o-mini", max_retries=0),
    tools=[add_note],
    system_prompt="You keep the user's notes.",
    middleware=[Counted()],
)
