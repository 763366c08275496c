"""A project's own nodes module."""

import asyncio
import os
import time

from langchain_core.runnables import RunnableConfig
from langgraph.store.base import BaseStore
from state import State

from tools import shout


def greet(state: State) -> State:
    greeting = os.environ.get("FIRST_CONTACT_GREETING", "?")
    return {"steps": [*state.get("steps", []), f"{greeting} {shout(state.get('text', ''))}"]}


async def agreet(state: State) -> State:
    await asyncio.sleep(0)
    return {"steps": [*state.get("steps", []), f"async {shout(state.get('text', ''))}"]}


def configured(state: State, config: RunnableConfig) -> State:
    tone = config.get("configurable", {}).get("tone", "plain")
    return {"steps": [*state.get("steps", []), f"{tone} {state.get('text', '')}"]}


def remember(state: State, *, store: BaseStore) -> State:
    """LangGraph's memory-agent template keeps memories under ("memories", user)."""
    namespace = ("memories", state.get("user", "anonymous"))
    store.put(namespace, f"m{len(store.search(namespace))}", {"text": state.get("text", "")})
    return {"remembered": [item.value["text"] for item in store.search(namespace)]}


def nap(state: State) -> State:
    time.sleep(float(os.environ.get("FIRST_CONTACT_NAP_S", "15")))
    return {"steps": [*state.get("steps", []), "woke"]}
