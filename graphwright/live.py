"""The CLI's live view of a streamed run: model tokens printed as they arrive, a spinner between."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.status import Status

if TYPE_CHECKING:
    from graphwright.results import StepEvent


class LiveText:
    """Prints each model reply's text piece by piece; the spinner pauses while text streams."""

    def __init__(self, console: Console, status: Status) -> None:
        self.console = console
        self.status = status
        self.current: str | None = None  # message id being printed
        self.texts: list[str] = []

    def token(self, event: StepEvent) -> None:
        if event.message_id != self.current or self.current is None:
            self.end()
            self.status.stop()
            self.current = event.message_id or ""
            self.texts.append("")
            self.console.print(f"[dim]{event.node}›[/dim] ", end="", highlight=False)
        text = event.text or ""
        self.texts[-1] += text
        self.console.print(text, end="", markup=False, highlight=False, soft_wrap=True)

    def end(self) -> None:
        """Close the reply being printed (a step event arrived) and bring the spinner back."""
        if self.current is not None:
            self.console.print()
            self.current = None
            self.status.start()

    def shown(self, text: str | None) -> bool:
        """Whether `text` was already printed as it streamed."""
        return bool(text) and any(t.strip() == (text or "").strip() for t in self.texts)
