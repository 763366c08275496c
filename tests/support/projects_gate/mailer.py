"""A LangChain agent whose send_email is gated by HumanInTheLoopMiddleware.

Each email sent appends one line to the file named by `MAILER_EFFECTS`: the effects are
counted outside the system under test.
"""

from __future__ import annotations

import os
from pathlib import Path

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI


@tool
def send_email(to: str, subject: str) -> str:
    """Send an email."""
    with Path(os.environ["MAILER_EFFECTS"]).open("a") as sent:
        sent.write(f"{to}|{subject}\n")
    return f"sent to {to}"


agent = create_agent(
    ChatOpenAI(model="gpt-4o-mini", max_retries=0),
    tools=[send_email],
    system_prompt="You are the mailer.",
    middleware=[HumanInTheLoopMiddleware(interrupt_on={"send_email": True})],
)
