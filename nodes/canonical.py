"""The canonical text of a tool call's arguments, apart from the state types (LangGraph).

So the gate's models load without them.
"""

from __future__ import annotations

import json
from typing import Any


def canonical(args: dict[str, Any] | str) -> str:
    """Arguments as sorted-key JSON, so equal calls compare equal."""
    if isinstance(args, str):
        return args
    return json.dumps(args, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
