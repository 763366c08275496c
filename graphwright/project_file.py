"""Where a `langgraph.json` is, apart from loading it (LangGraph).

The CLI's light reads check for one before they read a thread without its graph.
"""

from __future__ import annotations

import os
from pathlib import Path

from graphwright_errors import ConfigurationError

CONFIG_NAME = "langgraph.json"


def find_config(explicit: str | os.PathLike[str] | None = None) -> Path | None:
    """`explicit`, or `langgraph.json` in the working directory when there is one."""
    if explicit:
        path = Path(explicit)
        if path.is_dir():
            path = path / CONFIG_NAME
        if not path.is_file():
            raise ConfigurationError(
                f"no project file at {path}; give the path of a langgraph.json"
            )
        return path.resolve()
    here = Path.cwd() / CONFIG_NAME
    return here.resolve() if here.is_file() else None
