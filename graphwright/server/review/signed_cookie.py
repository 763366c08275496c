"""The signed login cookie: the API key is entered once and never travels again.

The cookie holds claims (who, until when) and an HMAC-SHA256 over them, keyed by a
secret derived from the service's API key, so changing the key logs everyone out.
It is `HttpOnly` (no script reads it) and `SameSite=Strict` (no other site's
page can make the browser send it). Shared by the review pages and the access rules.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from typing import Any

from fastapi import Request, Response

COOKIE = "gw_session"
DEFAULT_TTL_S = 8 * 3600


def secret_for(api_key: str) -> bytes:
    """The signing secret of a service whose API key is `api_key`."""
    return hmac.new(api_key.encode(), b"graphwright signed cookie v1", hashlib.sha256).digest()


def sign(
    claims: dict[str, Any], secret: bytes, *, ttl_s: int = DEFAULT_TTL_S, now: float | None = None
) -> str:
    """`claims` plus an expiry, as `<base64 JSON>.<base64 HMAC>`."""
    issued = time.time() if now is None else now
    body = _b64(json.dumps({**claims, "exp": int(issued + ttl_s)}, separators=(",", ":")).encode())
    return f"{body}.{_b64(_mac(body, secret))}"


def verify(token: str | None, secret: bytes, *, now: float | None = None) -> dict[str, Any] | None:
    """The claims of a genuine, unexpired token; None for anything else."""
    if not token or token.count(".") != 1:
        return None
    body, mac = token.split(".")
    try:
        if not hmac.compare_digest(_unb64(mac), _mac(body, secret)):
            return None
        claims = json.loads(_unb64(body))
    except (ValueError, TypeError):
        return None
    if not isinstance(claims, dict) or not isinstance(claims.get("exp"), int):
        return None
    return claims if claims["exp"] > (time.time() if now is None else now) else None


SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def same_origin(request: Request) -> bool:
    """Whether a browser sent the request from this server's own origin (or from no page).

    No page means no `Origin` header. SameSite=Strict does not tell apart two ports of one host,
    which count as one site; the CORS default (any origin) then needs this check for writes.
    """
    origin = request.headers.get("origin")
    return origin is None or origin == f"{request.url.scheme}://{request.headers.get('host', '')}"


def claims_of(request: Request, secret: bytes) -> dict[str, Any] | None:
    """The cookie's claims; a write from another origin's page gets none (no CSRF)."""
    if request.method not in SAFE_METHODS and not same_origin(request):
        return None
    return verify(request.cookies.get(COOKIE), secret)


def set_cookie(response: Response, token: str, *, secure: bool, ttl_s: int = DEFAULT_TTL_S) -> None:
    """Set the session cookie: HTTP only, SameSite=Strict, Secure over HTTPS."""
    response.set_cookie(
        COOKIE, token, max_age=ttl_s, path="/", httponly=True, samesite="strict", secure=secure
    )


def clear_cookie(response: Response) -> None:
    """Remove the session cookie (log out)."""
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")


def _mac(body: str, secret: bytes) -> bytes:
    return hmac.new(secret, body.encode(), hashlib.sha256).digest()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
