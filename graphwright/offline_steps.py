"""What the offline model's rules read and return: a step, the calls a conversation shows.

Also the answer language and the patterns more than one rule family reads.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

Step = list[tuple[str, dict[str, Any]]] | str

CJK = re.compile(r"[\u4e00-\u9fff]")
QUOTED = re.compile(r"[“\"「『'‘](.+?)[”\"」』'’]")


@dataclass(frozen=True)
class Done:
    """One call the conversation shows, with its parsed outcome."""

    tool: str
    args: dict[str, Any]
    ok: bool
    result: Any
    error_type: str | None
    error: str

    @classmethod
    def from_result_text(cls, tool: str, args: dict[str, Any] | str, text: str) -> Done:
        try:
            body = json.loads(text)
        except json.JSONDecodeError:
            body = None  # a result cut short by compaction: keep the raw text
        if not isinstance(body, dict) or "ok" not in body:
            return cls(tool, args if isinstance(args, dict) else {}, True, text, None, "")
        error = body.get("error") or {}
        return cls(
            tool,
            args if isinstance(args, dict) else {},
            bool(body["ok"]),
            body.get("result"),
            error.get("type"),
            error.get("message", ""),
        )


def chinese(goal: str, constraints: list[str]) -> bool:
    """Answer in Chinese for a Chinese goal, unless a constraint asks otherwise (or vice versa)."""
    joined = " ".join(constraints)
    if re.search(r"english|英文|英语", joined, re.IGNORECASE):
        return False
    if re.search(r"中文|chinese", joined, re.IGNORECASE):
        return True
    return bool(CJK.search(goal))


def find(done: list[Done], tool: str, **args: Any) -> Done | None:
    """The latest call of `tool` whose arguments include `args`."""
    for d in reversed(done):
        if d.tool == tool and all(d.args.get(k) == v for k, v in args.items()):
            return d
    return None
