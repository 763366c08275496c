"""The `/v1/embeddings` answer of the scripted OpenAI server: deterministic vectors.

A vector is a normalised bag of hashed words (or token ids), so equal inputs embed equally
and inputs sharing words score higher than unrelated ones: enough for a store's semantic
search to find what a test wrote, without a model.
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
import struct
from typing import Any

DEFAULT_DIMS = 1536  # text-embedding-3-small's width, which LangGraph's templates declare
WORD = re.compile(r"\w+")


def vector(item: str | list[int], dims: int) -> list[float]:
    """The unit vector of one input: a string, or the token ids a client sends instead."""
    parts = WORD.findall(item.lower()) if isinstance(item, str) else [str(t) for t in item]
    out = [0.0] * dims
    for part in parts or [""]:
        digest = hashlib.sha256(part.encode()).digest()
        out[int.from_bytes(digest[:4], "big") % dims] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in out)) or 1.0
    return [v / norm for v in out]


def embeddings_answer(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """The HTTP status and JSON the real API gives `body`; 400 names the bad field."""
    raw = body.get("input")
    inputs: list[Any] = [raw] if isinstance(raw, str) or _tokens(raw) else list(raw or [])
    dims = body.get("dimensions") or DEFAULT_DIMS
    if not inputs or not all(isinstance(i, str) or _tokens(i) for i in inputs):
        return 400, _error(
            "input", "'input' must be a string, an array of strings or of token arrays"
        )
    if not isinstance(dims, int) or dims < 1:
        return 400, _error("dimensions", "'dimensions' must be a positive integer")
    as_base64 = body.get("encoding_format") == "base64"
    data = []
    for index, item in enumerate(inputs):
        values = vector(item, dims)
        encoded: str | list[float] = (
            base64.b64encode(struct.pack(f"<{dims}f", *values)).decode() if as_base64 else values
        )
        data.append({"object": "embedding", "index": index, "embedding": encoded})
    used = sum(len(i) if not isinstance(i, str) else len(WORD.findall(i)) for i in inputs)
    return 200, {
        "object": "list",
        "data": data,
        "model": body.get("model", "scripted"),
        "usage": {"prompt_tokens": used, "total_tokens": used},
    }


def _tokens(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(t, int) for t in value)


def _error(param: str, message: str) -> dict[str, Any]:
    return {
        "error": {"message": message, "type": "invalid_request_error", "param": param, "code": None}
    }
