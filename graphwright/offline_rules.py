"""The offline model's rules: pure functions from goal, constraints and results to a next step.

A step is either a list of tool calls `[(name, args)]` or the answer text. `decide` tries
the agent's rule families in order; the replies of the other model calls (split, extract,
phrase, remember, synthesize) are here too, each from its family's module.
"""

from __future__ import annotations

from typing import Any

from graphwright.offline_actions import email, schedule
from graphwright.offline_memory import acknowledge, remember_reply
from graphwright.offline_orders import extract_reply, orders, phrase_reply
from graphwright.offline_reading import arithmetic, notes, pages
from graphwright.offline_split import split_reply, synth_reply
from graphwright.offline_steps import Done, Step, chinese

__all__ = [
    "Done",
    "Step",
    "decide",
    "extract_reply",
    "phrase_reply",
    "remember_reply",
    "split_reply",
    "synth_reply",
]


def decide(
    goal: str, constraints: list[str], done: list[Done], tools: dict[str, dict[str, Any]]
) -> Step:
    """The offline model's next step: the first rule that recognises the goal, else the fallback."""
    zh = chinese(goal, constraints)
    for rule in (pages, orders, schedule, email, notes, arithmetic, acknowledge):
        step = rule(goal, zh, done, tools)
        if step is not None:
            return step
    if zh:
        return (
            "离线模型只会处理订单查询、笔记检索与预算计算、安排日程、发送一封邮件和算术。"
            "设置 OPENAI_API_KEY 或 OPENAI_BASE_URL 可使用真实模型。"
        )
    return (
        "The offline model only handles order inquiries, notes search with budget sums, "
        "scheduling one event, sending one e-mail and arithmetic. "
        "Set OPENAI_API_KEY or OPENAI_BASE_URL to use a real model."
    )
