"""The graph's state, in its own module as LangGraph's templates keep it."""

from typing import TypedDict


class State(TypedDict, total=False):
    text: str
    steps: list[str]
    user: str
    remembered: list[str]
