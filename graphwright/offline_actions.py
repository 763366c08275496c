"""The offline model's rules that act for the user: book one event, send one e-mail."""

from __future__ import annotations

import re
from typing import Any

from graphwright.offline_steps import QUOTED, Done, Step, find

DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
TIME_RANGE = re.compile(r"(\d{1,2}:\d{2})\s*(?:-|–|~|到|至|to)\s*(\d{1,2}:\d{2})")
ADDRESS = re.compile(r"[^@\s，。:：]+@[^@\s，。]+\.[A-Za-z]{2,}")


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
