"""Who is calling.

The static API key, or a `langgraph_sdk.Auth` object's `authenticate` handler, run once per request;
and which of its `on` handlers decides an action.

`GRAPHWRIGHT_AUTH=path/to/auth.py:auth` (or `module:auth`) names the Auth object, or
`auth.path` in `langgraph.json` does (`configured_auth`).
"""

from __future__ import annotations

import hmac
import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import HTTPException, Request
from langgraph_sdk import Auth
from langgraph_sdk.auth import exceptions as auth_exceptions

from graphwright_errors import ConfigurationError

CookieHook = Callable[[Request], "User | None"]
"""Returns the user a verified session cookie names (the review page), or None."""


@dataclass(frozen=True)
class User:
    """The authenticated caller, shaped like `langgraph_sdk.auth.types.BaseUser`."""

    identity: str
    permissions: tuple[str, ...] = ()
    display_name: str = ""
    is_authenticated: bool = True
    extra: Mapping[str, Any] = field(default_factory=dict)

    def _as_dict(self) -> dict[str, Any]:
        return {
            **self.extra,
            "identity": self.identity,
            "permissions": list(self.permissions),
            "display_name": self.display_name or self.identity,
            "is_authenticated": self.is_authenticated,
        }

    def __getitem__(self, key: str) -> Any:
        return self._as_dict()[key]

    def __contains__(self, key: object) -> bool:
        return key in self._as_dict()

    def __iter__(self) -> Iterator[str]:
        return iter(self._as_dict())


ANONYMOUS = User(identity="", is_authenticated=False)


def to_user(found: Any) -> User:
    """What an authenticate handler returned: a string, a user dict, or a user object."""
    if isinstance(found, str):
        return User(identity=found)
    if isinstance(found, Mapping):
        if not found.get("identity"):
            raise ConfigurationError("the authenticate handler returned a user without 'identity'")
        rest = {
            k: v
            for k, v in found.items()
            if k not in ("identity", "permissions", "display_name", "is_authenticated")
        }
        return User(
            identity=str(found["identity"]),
            permissions=tuple(found.get("permissions") or ()),
            display_name=str(found.get("display_name") or ""),
            is_authenticated=bool(found.get("is_authenticated", True)),
            extra=rest,
        )
    identity = getattr(found, "identity", None)
    if not identity:
        raise ConfigurationError(
            f"the authenticate handler returned {type(found).__name__}, "
            "not a string, a user dict or an object with .identity"
        )
    return User(
        identity=str(identity),
        permissions=tuple(getattr(found, "permissions", ()) or ()),
        display_name=str(getattr(found, "display_name", "") or ""),
    )


def load_auth(target: str, *, base: Path | None = None) -> Auth:
    """The `Auth` object at `file.py:name` (relative to `base`) or `module:name`."""
    where, sep, name = target.rpartition(":")
    if not sep or not where or not name:
        raise ConfigurationError(
            f"auth path {target!r} must look like 'auth.py:auth' or 'pkg.mod:auth'"
        )
    if where.endswith(".py"):
        path = (base or Path.cwd()) / where
        spec = importlib.util.spec_from_file_location(f"graphwright_auth_{path.stem}", path)
        if spec is None or spec.loader is None or not path.is_file():
            raise ConfigurationError(f"auth file {path} does not exist")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(where)
    found = getattr(module, name, None)
    if not isinstance(found, Auth):
        raise ConfigurationError(f"{target!r} is {type(found).__name__}, not a langgraph_sdk.Auth")
    return found


def configured_auth(setting: str | None, project_path: str | None) -> Auth | None:
    """The `Auth` the service runs under.

    `GRAPHWRIGHT_AUTH` or `auth.path` in `langgraph.json`. Both set is refused rather than one of
    them dropped.
    """
    if setting and project_path:
        raise ConfigurationError(
            f"auth is named twice: GRAPHWRIGHT_AUTH={setting} and auth.path "
            f"{project_path} in langgraph.json; keep one"
        )
    target = setting or project_path
    return load_auth(target) if target else None


def as_http(exc: auth_exceptions.HTTPException) -> HTTPException:
    """A `langgraph_sdk.Auth` handler's HTTPException as FastAPI's, status and headers kept."""
    return HTTPException(
        status_code=exc.status_code,
        detail=exc.detail,
        headers=dict(exc.headers) if exc.headers else None,
    )


@dataclass
class Authority:
    """The service's auth: a custom `Auth`, else the static key, else open."""

    auth: Auth | None = None
    api_key: str | None = None
    cookie: CookieHook | None = None

    @property
    def isolating(self) -> bool:
        """Whether identities are per user (a custom authenticate handler), not one shared key."""
        return self.auth is not None and self.auth._authenticate_handler is not None

    async def authenticate(self, request: Request) -> User:
        """The caller; raises 401 (or the handler's own status) when they are not let in."""
        if self.cookie is not None and (user := self.cookie(request)) is not None:
            return user
        if self.auth is not None:
            handler = self.auth._authenticate_handler
            if handler is None:
                return ANONYMOUS
            try:
                found = await handler(**_authenticate_args(handler, request))
            except auth_exceptions.HTTPException as exc:
                raise as_http(exc) from exc
            return to_user(found)
        if self.api_key is not None:
            given = request.headers.get("x-api-key", "")
            if not hmac.compare_digest(given.encode(), self.api_key.encode()):
                raise HTTPException(status_code=401, detail="missing or wrong API key")
        return ANONYMOUS

    def handler(self, resource: str, action: str) -> Callable[..., Any] | None:
        """The most specific `on` handler: resource+action, resource, action, then global."""
        if self.auth is None:
            return None
        handlers = self.auth._handlers
        for key in ((resource, action), (resource, "*"), ("*", action), ("*", "*")):
            if key in handlers:
                return handlers[key][-1]
        return self.auth._global_handlers[-1] if self.auth._global_handlers else None


def _authenticate_args(handler: Callable[..., Any], request: Request) -> dict[str, Any]:
    available: dict[str, Callable[[], Any]] = {
        "request": lambda: request,
        "path": lambda: request.url.path,
        "method": lambda: request.method,
        "path_params": lambda: dict(request.path_params),
        "query_params": lambda: dict(request.query_params),
        "headers": lambda: {k.lower(): v for k, v in request.headers.raw},
        "authorization": lambda: request.headers.get("authorization"),
        "scopes": lambda: [],
    }
    wanted: Sequence[str] = list(inspect.signature(handler).parameters)
    unknown = [n for n in wanted if n not in available]
    if unknown:
        raise ConfigurationError(
            f"the authenticate handler asks for {unknown}; it may take any of {sorted(available)}"
        )
    return {n: available[n]() for n in wanted}
