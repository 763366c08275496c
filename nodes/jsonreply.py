"""Parse the JSON a model was asked to reply with, tolerating a Markdown code fence."""

from __future__ import annotations

import json
from typing import Any


def parse_json_reply(text: str) -> Any:
    """The JSON value in ``text``; raises ``ValueError`` (``json.JSONDecodeError``) if there is none."""
    body = text.strip()
    if body.startswith("```"):
        body = body.strip("`").removeprefix("json").strip()
    return json.loads(body)
