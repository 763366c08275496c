"""Remove secrets from anything written to a trace: by key name and by value shape."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

MASK = "***"

_SECRET_KEY = re.compile(
    r"(api[_-]?key|password|passwd|pwd|token(?!s)|authorization|secret|credential|private[_-]?key|cookie)",
    re.IGNORECASE,
)
# Shapes of common credentials: provider keys, bearer headers, JWTs, AWS ids,
# URLs with a password, and long random-looking strings.
_SECRET_VALUE = re.compile(
    r"(sk-[A-Za-z0-9_-]{16,}"
    r"|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}"
    r"|AKIA[0-9A-Z]{16}"
    r"|(?i:bearer)\s+[A-Za-z0-9._~+/=-]{8,}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"
    r"|(?<=://)[^/\s:@]+:[^/\s@]+(?=@)"
    r"|\b(?=[A-Za-z0-9+/_-]*\d)(?=[A-Za-z0-9+/_-]*[A-Za-z])[A-Za-z0-9+/_-]{40,}\b)"
)


def redact_text(text: str) -> str:
    """Mask every substring shaped like a credential."""
    return _SECRET_VALUE.sub(MASK, text)


def redact(value: Any) -> Any:
    """A copy of ``value`` with secret-named fields and credential-shaped strings masked."""
    if isinstance(value, Mapping):
        return {
            k: MASK if isinstance(k, str) and _SECRET_KEY.search(k) else redact(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    if isinstance(value, str):
        return redact_text(value)
    return value
