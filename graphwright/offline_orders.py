"""The offline model's order rules: look an order and its tracking up, answer from them.

The order-support workflow's extraction and phrasing use the same rules and words.
"""

from __future__ import annotations

import json
import re
from typing import Any

from graphwright.offline_steps import Done, Step, chinese, find

# Loose on purpose, as a language model would be: "a 1001" and "A-1001" are A1001.
ORDER_ID = re.compile(r"(?<![A-Za-z0-9])([A-Za-z])[\s-]?(\d{4,10})(?![0-9])")


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
