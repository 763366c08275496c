"""A LangChain agent with a tool that writes, gated by HumanInTheLoopMiddleware."""

from __future__ import annotations

import os
from pathlib import Path

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI


@tool
def write_note(title: str, body: str) -> str:
    """Write a note to the notes folder."""
    path = Path(os.environ["NOTES_DIR"]) / f"{title}.txt"
    path.write_text(body, encoding="utf-8")
    return f"wrote {path.name}"


@tool
def count_notes() -> int:
    """How many notes there are."""
    return len(list(Path(os.environ["NOTES_DIR"]).glob("*.txt")))


agent = create_agent(
    ChatOpenAI(model="gpt-4o-mini", max_retries=0),
    tools=[write_note, count_notes],
    system_prompt="You keep the user's notes.",
    middleware=[
        HumanInTheLoopMiddleware(
            interrupt_on={
                "write_note": {
                    "allowed_decisions": ["approve", "edit", "reject"],
                    "description": "Writing a note changes the notes folder",
                }
            },
        )
    ],
)
