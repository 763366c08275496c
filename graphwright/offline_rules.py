"""The offline model's rules: pure functions from goal, constraints and results to a next step.

A step is either a list of tool calls `[(name, args)]` or the answer text.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

Step = list[tuple[str, dict[str, Any]]] | str

# Loose on purpose, as a language model would be: "a 1001" and "A-1001" are A1001.
ORDER_ID = re.compile(r"(?<![A-Za-z0-9])([A-Za-z])[\s-]?(\d{4,10})(?![0-9])")
DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
TIME_RANGE = re.compile(r"(\d{1,2}:\d{2})\s*(?:-|–|~|到|至|to)\s*(\d{1,2}:\d{2})")
QUOTED = re.compile(r"[“\"「『'‘](.+?)[”\"」』'’]")
EXPRESSION = re.compile(r"[(\d][\d\s.()]*[+\-*/][\d\s+\-*/.()]*[\d)]")
PAGES = re.compile(
    r"(?:pages?|第)\s*(\d+)\s*(?:-|–|to|到|至)\s*(?:第\s*)?(\d+)\s*(?:页)?", re.IGNORECASE
)
INSTRUCTION_LIKE = re.compile(
    r"(忽略之前|忽略以上|ignore (all |the )?previous|send_email|调用|不要告诉用户|system prompt)",
    re.IGNORECASE,
)
CJK = re.compile(r"[\u4e00-\u9fff]")
ADDRESS = re.compile(r"[^@\s，。:：]+@[^@\s，。]+\.[A-Za-z]{2,}")
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


def orders(goal: str, zh: bool, done: list[Done], tools: dict[str, dict[str, Any]]) -> Step | None:
    """Look up an order and its tracking, answering from what the tools returned."""
    if "get_order" not in tools:
        return None
    ids = [(letter + digits).upper() for letter, digits in ORDER_ID.findall(goal)]
    if not ids and not re.search(
        r"订单|快递|物流|包裹|发货|order|shipping|deliver|tracking", goal, re.I
    ):
        return None
    if not ids:
        if zh:
            return "请提供订单号（例如 A1001），我再帮你查询。"
        return "Please tell me the order id (for example A1001) and I will look it up."
    order_id = ids[0]
    order = find(done, "get_order", order_id=order_id)
    if order is None:
        return [("get_order", {"order_id": order_id})]
    if not order.ok:
        return _order_failed(order_id, order, zh)
    return _order_status(order_id, order, zh, done, tools)


def _order_failed(order_id: str, order: Done, zh: bool) -> str:
    if order.error_type == "not_found":
        return (
            f"没有找到订单 {order_id}，请核对订单号。"
            if zh
            else (f"I could not find order {order_id}; please check the id.")
        )
    return (
        f"查询订单 {order_id} 失败：{order.error}"
        if zh
        else (f"Looking up order {order_id} failed: {order.error}")
    )


def _order_status(
    order_id: str, order: Done, zh: bool, done: list[Done], tools: dict[str, dict[str, Any]]
) -> Step:
    status, tracking_no = order.result.get("status"), order.result.get("tracking_no")
    if status == "paid":
        return (
            f"订单 {order_id} 已付款，还没有发货，暂时没有物流信息。"
            if zh
            else (
                f"Order {order_id} is paid and not shipped yet, "
                "so there is no tracking information."
            )
        )
    if status != "shipped" or not tracking_no:
        return f"订单 {order_id} 的状态是 {status}。" if zh else f"Order {order_id} is {status}."
    return _shipped(order_id, tracking_no, zh, done, tools)


def _shipped(
    order_id: str, tracking_no: str, zh: bool, done: list[Done], tools: dict[str, dict[str, Any]]
) -> Step:
    tracking = find(done, "get_tracking", tracking_no=tracking_no)
    if tracking is None and "get_tracking" in tools:
        return [("get_tracking", {"tracking_no": tracking_no})]
    if tracking is None or not tracking.ok:
        why = tracking.error if tracking else "no tracking tool"
        return (
            f"订单 {order_id} 已发货，物流单号 {tracking_no}，但暂时查不到物流信息（{why}）。"
            if zh
            else (
                f"Order {order_id} has shipped ({tracking_no}) but tracking is unavailable ({why})."
            )
        )
    info = tracking.result
    if zh:
        return (
            f"订单 {order_id} 已发货，物流单号 {tracking_no}，当前物流状态：{info['status']}"
            f"（{info.get('latest_event', '')}）。"
        )
    return f"Order {order_id} has shipped ({tracking_no}); delivery status: {info['status']}."


def schedule(
    goal: str, zh: bool, done: list[Done], tools: dict[str, dict[str, Any]]
) -> Step | None:
    """Book one event from a date and a time range, or ask for them."""
    if "create_event" not in tools or not re.search(
        r"安排|日程|会议|预约|评审|schedule|meeting|event|calendar|book", goal, re.I
    ):
        return None
    date, span = DATE.search(goal), TIME_RANGE.search(goal)
    if date is None or span is None:
        return (
            "请告诉我日期（YYYY-MM-DD）和起止时间（例如 10:00-11:00）。"
            if zh
            else (
                "Please give me the date (YYYY-MM-DD) "
                "and the start and end time (e.g. 10:00-11:00)."
            )
        )
    quoted = QUOTED.search(goal)
    title = quoted.group(1) if quoted else ("会议" if zh else "Meeting")
    day = date.group(0)
    start = f"{day}T{int(span.group(1)[:-3]):02d}:{span.group(1)[-2:]}"
    end = f"{day}T{int(span.group(2)[:-3]):02d}:{span.group(2)[-2:]}"
    created = find(done, "create_event")
    if created is not None:
        return _event_outcome(created, title, zh)
    listed = find(done, "get_schedule", date=day)
    if listed is None and "get_schedule" in tools:
        return [("get_schedule", {"date": day})]
    for other in (listed.result if listed and listed.ok else []) or []:
        if other["start_time"] < end and start < other["end_time"]:
            return (
                (
                    f"{day} 的这个时段已有「{other['title']}」（{other['start_time'][-5:]}–"
                    f"{other['end_time'][-5:]}），没有创建。请换一个时间。"
                )
                if zh
                else (
                    f"That slot overlaps '{other['title']}'; nothing was created. "
                    "Please pick another time."
                )
            )
    return [("create_event", {"title": title, "start_time": start, "end_time": end})]


def _event_outcome(created: Done, title: str, zh: bool) -> str:
    if created.ok and not isinstance(created.result, dict):  # a reviewer's "mark done" text
        return (
            f"已创建日程「{title}」：{created.result}"
            if zh
            else f"Created '{title}': {created.result}"
        )
    if created.ok:
        e = created.result
        span = f"{e['start_time'].replace('T', ' ')}–{e['end_time'][-5:]}"
        return (
            f"已创建日程「{e['title']}」：{span}。" if zh else f"Created '{e['title']}' for {span}."
        )
    if created.error_type == "rejected":
        reason = created.error.removeprefix("rejected by the reviewer: ")
        return (
            f"没有创建日程「{title}」：审批人拒绝了这个操作（{reason}）。"
            if zh
            else f"I did not create '{title}': the reviewer rejected it ({reason})."
        )
    return (
        f"没有创建日程「{title}」：{created.error}"
        if zh
        else f"I did not create '{title}': {created.error}"
    )


def email(goal: str, zh: bool, done: list[Done], tools: dict[str, dict[str, Any]]) -> Step | None:
    """Send one e-mail to the address the goal gives, with the text it quotes."""
    address = ADDRESS.search(goal)
    if (
        "send_email" not in tools
        or address is None
        or not re.search(r"邮件|e-?mail|mail", goal, re.I)
    ):
        return None
    quoted = QUOTED.search(goal)
    subject = quoted.group(1) if quoted else ("（无主题）" if zh else "(no subject)")
    said = re.search(r"(?:内容[:：]|saying|that says|body[:：])\s*(.+)$", goal, re.I)
    body = said.group(1).strip() if said else goal
    sent = find(done, "send_email")
    if sent is None:
        return [("send_email", {"to": address.group(0), "subject": subject, "body": body})]
    if sent.ok:
        to = sent.result.get("to", address.group(0))
        return (
            f"已把邮件「{subject}」发给 {to}（已进入发件箱）。"
            if zh
            else f"Sent '{subject}' to {to} (queued in the outbox)."
        )
    if sent.error_type == "rejected":
        reason = sent.error.removeprefix("rejected by the reviewer: ")
        return (
            f"没有发送邮件：审批人拒绝了（{reason}）。"
            if zh
            else f"I did not send the e-mail: the reviewer rejected it ({reason})."
        )
    return f"没有发送邮件：{sent.error}" if zh else f"I did not send the e-mail: {sent.error}"


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


def extract_reply(message: str) -> str:
    """Order-id extraction for the order-support workflow."""
    match = ORDER_ID.search(message)
    return json.dumps({"order_id": (match.group(1) + match.group(2)).upper() if match else None})


def phrase_reply(facts_json: str) -> str:
    """Phrase an order answer from the workflow's facts, with the same words as the agent rule."""
    facts = json.loads(facts_json)
    question = facts.get("question") or ""
    order = facts.get("order") or {}
    done = [Done("get_order", {"order_id": order.get("order_id")}, True, order, None, "")]
    if facts.get("tracking"):
        done.append(
            Done(
                "get_tracking",
                {"tracking_no": order.get("tracking_no")},
                True,
                facts["tracking"],
                None,
                "",
            )
        )
    elif facts.get("tracking_error"):
        done.append(
            Done(
                "get_tracking",
                {"tracking_no": order.get("tracking_no")},
                False,
                None,
                "unavailable",
                facts["tracking_error"],
            )
        )
    goal = f"{question} {order.get('order_id', '')}"
    step = orders(
        goal,
        chinese(question, facts.get("constraints") or []),
        done,
        {"get_order": {}, "get_tracking": {}},
    )
    return step if isinstance(step, str) else json.dumps(order, ensure_ascii=False)


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
