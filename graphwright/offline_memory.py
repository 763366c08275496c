"""The offline model's memory rules: a lasting language preference, and what to remember."""

from __future__ import annotations

import json
import re
from typing import Any

from graphwright.offline_steps import Done, Step

LASTING = re.compile(
    r"以后|今后|之后|从现在起|from now on|always|for this project|in this project|本项目|这个项目",
    re.I,
)


def language_preference(text: str) -> str | None:
    """The answer language a user asks for from now on, if the text says so."""
    if not LASTING.search(text):
        return None
    if re.search(r"中文|chinese", text, re.I):
        return "中文"
    if re.search(r"english|英文|英语", text, re.I):
        return "English"
    return None


def acknowledge(
    goal: str, zh: bool, done: list[Done], tools: dict[str, dict[str, Any]]
) -> Step | None:
    """Acknowledge a stated language preference (the memory tests' remembered fact)."""
    language = language_preference(goal)
    if language is None:
        return None
    return (
        f"好的，以后用{language}回答。"
        if language == "中文"
        else f"OK, I will answer in {language} from now on."
    )


def remember_reply(payload: str) -> str:
    """The remember step: explicit language preferences and names, from the user's words only."""
    found: list[dict[str, Any]] = []
    for message in json.loads(payload):
        text = str(message.get("content") or "")
        language = language_preference(text)
        if language:
            found.append(
                {
                    "kind": "preference",
                    "key": "language",
                    "value": language,
                    "message_id": message.get("id"),
                }
            )
        name = re.search(r"(?:我叫|my name is)\s*([^\s，。,.!！]+)", text, re.I)
        if name:
            found.append(
                {
                    "kind": "fact",
                    "key": "name",
                    "value": name.group(1),
                    "message_id": message.get("id"),
                }
            )
    return json.dumps({"memories": found}, ensure_ascii=False)
