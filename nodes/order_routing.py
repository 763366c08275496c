"""The order-support workflow's edges: pure functions of state, routing on data in code."""

from __future__ import annotations

from typing import Literal

from graphwright.nodes.order_steps import OrderState


def after_extract(state: OrderState) -> Literal["lookup", "ask"]:
    """No id: ask for it; never guess one."""
    return "lookup" if state.get("order_id") else "ask"


def after_lookup(state: OrderState) -> Literal["track", "phrase", "not_found", "failed"]:
    """Shipped orders get tracking; paid (or any other status) are phrased as they are."""
    error = state.get("error")
    if error:
        return "not_found" if error.get("type") == "not_found" else "failed"
    order = state.get("order") or {}
    if order.get("status") == "shipped" and order.get("tracking_no"):
        return "track"
    return "phrase"
