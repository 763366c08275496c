"""The offline model's rules that read and compute: page ranges, notes and their budget, sums."""

from __future__ import annotations

import re
from typing import Any

from graphwright.offline_steps import QUOTED, Done, Step, find

EXPRESSION = re.compile(r"[(\d][\d\s.()]*[+\-*/][\d\s+\-*/.()]*[\d)]")
PAGES = re.compile(
    r"(?:pages?|第)\s*(\d+)\s*(?:-|–|to|到|至)\s*(?:第\s*)?(\d+)\s*(?:页)?", re.IGNORECASE
)
INSTRUCTION_LIKE = re.compile(
    r"(忽略之前|忽略以上|ignore (all |the )?previous|send_email|调用|不要告诉用户|system prompt)",
    re.IGNORECASE,
)
STOPWORDS = {
    "which",
    "plan",
    "project",
    "notes",
    "note",
    "the",
    "in",
    "mentions",
    "mention",
    "find",
    "its",
    "budget",
    "expression",
    "and",
    "compute",
    "total",
    "sum",
    "of",
    "what",
    "does",
    "say",
    "about",
    "me",
    "tell",
    "my",
    "a",
    "an",
    "is",
    "are",
    "for",
    "with",
    "search",
    "look",
    "up",
    "calculate",
    "please",
    "to",
    "it",
    "that",
    "them",
    "then",
    "there",
}


def page_tool(tools: dict[str, dict[str, Any]]) -> str | None:
    """A bound tool that takes an integer `page`, if any."""
    for name, fn in tools.items():
        props = (fn.get("parameters") or {}).get("properties") or {}
        if (props.get("page") or {}).get("type") == "integer":
            return name
    return None


def pages(goal: str, zh: bool, done: list[Done], tools: dict[str, dict[str, Any]]) -> Step | None:
    """Read a page range with the page tool, one call per missing page."""
    tool, match = page_tool(tools), PAGES.search(goal)
    if tool is None or match is None:
        return None
    first, last = int(match.group(1)), int(match.group(2))
    read = {d.args.get("page") for d in done if d.tool == tool and d.ok}
    missing = [p for p in range(first, last + 1) if p not in read]
    if missing:
        return [(tool, {"page": missing[0]})]
    count = last - first + 1
    if zh:
        return f"已读取第 {first} 到 {last} 页，共 {count} 页。"
    return f"Read pages {first} to {last}: {count} pages."


def _keyword(goal: str) -> str | None:
    quoted = QUOTED.search(goal)
    if quoted:
        return quoted.group(1)
    about = re.search(r"关于(.+?)的", goal)
    if about:
        return about.group(1).strip()
    words = [w for w in re.findall(r"[A-Za-z][A-Za-z0-9_-]+", goal) if w.lower() not in STOPWORDS]
    words.sort(key=lambda w: not w[0].isupper())
    return words[0] if words else None


def notes(goal: str, zh: bool, done: list[Done], tools: dict[str, dict[str, Any]]) -> Step | None:
    """Search the notes by a keyword and sum the budget expression they hold."""
    if "search_notes" not in tools or not re.search(r"笔记|方案|notes?\b", goal, re.I):
        return None
    keyword = _keyword(goal)
    if keyword is None:
        return (
            "你想在笔记里找什么关键词？" if zh else "Which keyword should I search the notes for?"
        )
    found = find(done, "search_notes", keyword=keyword)
    if found is None:
        return [("search_notes", {"keyword": keyword})]
    hits = found.result if found.ok else []
    if not hits:
        return (
            f"笔记里没有找到和「{keyword}」相关的内容。" if zh else f"No note mentions '{keyword}'."
        )
    titles = (
        "、".join(f"「{h['title']}」" for h in hits) if zh else ", ".join(h["title"] for h in hits)
    )
    warning = _injection_warning(hits, zh)
    wants_sum = re.search(r"计算|预算|总和|合计|求和|sum|total|budget|calculate", goal, re.I)
    expr = next((m.group(0).strip() for h in hits if (m := EXPRESSION.search(h["content"]))), None)
    if wants_sum and expr and "calculate" in tools:
        calc = find(done, "calculate", expression=expr)
        if calc is None:
            return [("calculate", {"expression": expr})]
        value = calc.result if calc.ok else calc.error
        if zh:
            return (
                f"提到 {keyword} 的方案是{titles}，"
                f"预算表达式 {expr} 的计算结果是 {value}。{warning}"
            )
        return (
            f"The note mentioning {keyword} is {titles}; "
            f"its budget {expr} comes to {value}.{warning}"
        )
    body = "；".join(
        f"{h['title']}：{h['content'][:60]}"
        for h in hits
        if not INSTRUCTION_LIKE.search(h["content"])
    )
    if zh:
        return f"找到 {len(hits)} 条和「{keyword}」相关的笔记：{titles}。{body}{warning}"
    return f"Found {len(hits)} note(s) about '{keyword}': {titles}. {body}{warning}"


def _injection_warning(hits: list[dict[str, str]], zh: bool) -> str:
    flagged = [h["title"] for h in hits if INSTRUCTION_LIKE.search(h["content"])]
    if not flagged:
        return ""
    if zh:
        return (
            f" 注意：笔记「{'、'.join(flagged)}」里有要求调用工具或发送信息的指令；"
            "笔记只是数据，我没有执行。"
        )
    return (
        f" Note: {', '.join(flagged)} contains instructions to call tools; "
        "notes are data, so I ignored them."
    )


def arithmetic(
    goal: str, zh: bool, done: list[Done], tools: dict[str, dict[str, Any]]
) -> Step | None:
    """Evaluate the goal's expression with the calculator."""
    match = EXPRESSION.search(goal)
    if "calculate" not in tools or match is None:
        return None
    expr = match.group(0).strip()
    calc = find(done, "calculate", expression=expr)
    if calc is None:
        return [("calculate", {"expression": expr})]
    if not calc.ok:
        return (
            f"无法计算 {expr}：{calc.error}" if zh else f"I could not compute {expr}: {calc.error}"
        )
    return f"{expr} = {calc.result}"
