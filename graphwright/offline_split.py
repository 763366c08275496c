"""The offline model's orchestrator replies: split a task among workers, sum their results up."""

from __future__ import annotations

import json
import re

from graphwright.offline_steps import CJK

WORKER_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "order_desk",
        re.compile(r"(?<![A-Za-z0-9])[A-Z]\d{4,10}(?![A-Za-z0-9])|订单|快递|物流|order", re.I),
    ),
    ("scheduler", re.compile(r"安排|日程|会议|预约|schedule|meeting|calendar|book", re.I)),
    ("notes_researcher", re.compile(r"笔记|方案|notes?\b|预算|budget", re.I)),
)


def split_reply(task: str, system: str) -> str:
    """Assign each sentence of the task to the first worker whose rule matches it."""
    goal = task.split("\nConstraint:")[0].split("\nEarlier turns")[0]
    available = set(re.findall(r"^- (\w+):", system, re.M))
    sentences = [
        s.strip() for s in re.split(r"(?<=[。；;！？!?])|\n|(?<=\.)\s+", goal) if s.strip()
    ]
    parts: dict[str, list[str]] = {}
    for sentence in sentences:
        for worker, pattern in WORKER_RULES:
            if worker in available and pattern.search(sentence):
                parts.setdefault(worker, []).append(sentence)
                break
    subtasks = [{"worker": w, "instructions": " ".join(s)} for w, s in parts.items()]
    return json.dumps({"subtasks": subtasks[:3]}, ensure_ascii=False)


def synth_reply(payload: str) -> str:
    """The orchestrator's final answer from the workers' results."""
    data = json.loads(payload)
    n = len(data.get("results") or [])
    return (
        f"已完成 {n} 个子任务，结果如下。"
        if CJK.search(data.get("task") or "")
        else f"Completed {n} subtasks."
    )
