"""What a web page in a user's browser may make this server do.

The `Host` it must be addressed by (DNS rebinding), the `Origin` a request may come from, and the
review page's CSRF token. The rules and why are in docs/security.md.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import re
import secrets
import socket
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from fastapi import HTTPException, Request, Response
from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

SAFE = frozenset({"GET", "HEAD", "OPTIONS"})
SESSION_COOKIE = "gw_review_session"  # the browser session a review page's CSRF token binds to
CSRF_HEADER = "x-csrf-token"


def hostname(host_header: str) -> str:
    """The name in a `Host` header, without its port (`[::1]:80` is `::1`)."""
    host = host_header.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def own_names(allowed: Iterable[str]) -> frozenset[str]:
    """`localhost`, this machine's name and the configured ones.

    No DNS query: a name that only DNS ties to this machine must be configured.
    """
    return frozenset(
        {"localhost", socket.gethostname().lower(), *(a.strip().lower() for a in allowed)}
    )


def own_host(name: str, names: frozenset[str]) -> bool:
    """Whether `name` addresses this server.

    An IP address (a rebinding page is always reached by a DNS name, never by an address), or one of
    `names` (`own_names`).
    """
    if not name:
        return True  # HTTP/1.0 without a Host: no browser sends that
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        pass
    return name in names or name.endswith(".localhost")


@dataclass(frozen=True, kw_only=True)
class Origins:
    """The browser origins allowed besides the server's own: those CORS names (never `*`)."""

    named: frozenset[str]
    pattern: re.Pattern[str] | None = None

    @classmethod
    def of(cls, cors: dict[str, Any]) -> Origins:
        named = frozenset(str(o).rstrip("/") for o in cors.get("allow_origins") or () if o != "*")
        regex = cors.get("allow_origin_regex")
        return cls(named=named, pattern=re.compile(regex) if regex else None)

    def allow(self, origin: str | None, host_header: str) -> bool:
        """No `Origin` (an API client, or a same-origin GET), the server's own, or a named one."""
        if origin is None:
            return True
        if urlsplit(origin).netloc.lower() == host_header.strip().lower():
            return True
        return origin.rstrip("/") in self.named or bool(
            self.pattern is not None and self.pattern.fullmatch(origin)
        )


class BrowserGuard:
    """Refuses what a foreign page would make a browser send.

    On an open server (no API key, no custom auth), where a request needs nothing a page lacks: a
    `Host` that is not the server's (DNS rebinding) and any request from an origin not allowed. On
    every server: a review write (which a login cookie may carry) from an origin not allowed.
    """

    def __init__(
        self, app: ASGIApp, *, open_server: bool, origins: Origins, hosts: frozenset[str]
    ) -> None:
        """`hosts`: the server's own names (`own_names`, looked up before serving)."""
        self.app, self.open, self.origins, self.hosts = app, open_server, origins, hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self.refusal(scope)
        if refusal is None:
            await self.app(scope, receive, send)
            return
        await PlainTextResponse(refusal, status_code=403)(scope, receive, send)

    def refusal(self, scope: Scope) -> str | None:
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        if self.open and not own_host(hostname(host), self.hosts):
            return (
                f"Host {hostname(host)!r} is not this server's name; name it in "
                "GRAPHWRIGHT_ALLOWED_HOSTS if it is"
            )
        review_write = (
            str(scope.get("path", "")).startswith("/review") and scope.get("method") not in SAFE
        )
        if (self.open or review_write) and not self.origins.allow(headers.get("origin"), host):
            return (
                f"Origin {headers.get('origin')!r} may not call this server; name it in "
                "CORS_ALLOW_ORIGINS (or http.cors) if it should"
            )
        return None


def _token(secret: bytes, session: str) -> str:
    return hmac.new(secret, f"review csrf {session}".encode(), hashlib.sha256).hexdigest()


def review_csrf(request: Request, secret: bytes) -> tuple[str, str | None]:
    """The CSRF token for the page being answered, bound to the browser's session cookie.

    And the new session to set (`set_session`) when the browser has none yet.
    """
    session = request.cookies.get(SESSION_COOKIE) or ""
    new = None
    if len(session) < 32:
        session = new = secrets.token_urlsafe(32)
    return _token(secret, session), new


def set_session(request: Request, response: Response, session: str) -> None:
    """`HttpOnly` (no script reads it) and `SameSite=Strict` (no other site sends it)."""
    response.set_cookie(
        SESSION_COOKIE,
        session,
        path="/review",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )


def check_csrf(request: Request, secret: bytes, *, by_header: bool) -> None:
    """403 for a browser's review write without the token of its session.

    A browser may have sent it on a page's behalf. A write its own credential header let in
    (`by_header`) is an API client's: no cookie or open door speaks for it, so it needs no token.
    """
    if by_header:
        return
    session = request.cookies.get(SESSION_COOKIE) or ""
    given = request.headers.get(CSRF_HEADER) or ""
    if not session or not hmac.compare_digest(given, _token(secret, session)):
        raise HTTPException(
            status_code=403,
            detail="the answer carries no valid CSRF token: "
            "answer from the review page itself (reload it)",
        )


def secret_of(client: Any, key: str) -> bytes:
    """The deployment's CSRF key, made by the first process that asks (SET NX)."""
    client.set(key, secrets.token_hex(32), nx=True)
    value = client.get(key)
    return bytes.fromhex(value.decode() if isinstance(value, bytes) else str(value))
