"""Cross-origin access for browser clients, as the reference Agent Server sets it up.

Any origin by default (`CORS_ALLOW_ORIGINS`, default `*`, without credentials then), or the
`http.cors` section of `langgraph.json` (`CORS_CONFIG` as JSON overrides it).
`GRAPHWRIGHT_CORS_ORIGINS`, graphwright's older setting, names the origins too.
`ALLOW_PRIVATE_NETWORK` (set by `serve` on a loopback address, as `langgraph dev` sets it) answers
Chrome's private-network preflight, so a hosted page may call a local server.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware

from graphwright_errors import ConfigurationError

# Headers a browser client reads from answers: the run a stream belongs to, and paging.
EXPOSED = ["Content-Location", "Location", "X-Pagination-Next", "X-Pagination-Total"]
OPTIONS = frozenset(
    {
        "allow_origins",
        "allow_methods",
        "allow_headers",
        "allow_credentials",
        "allow_origin_regex",
        "expose_headers",
        "max_age",
    }
)


def _origins(text: str) -> list[str]:
    return [o.strip().rstrip("/") for o in text.split(",") if o.strip()]


def cors_options(
    graphwright_origins: str | None,
    http_cors: Mapping[str, Any] | None,
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The CORSMiddleware options.

    `http.cors` (or `CORS_CONFIG`) when given, with `CORS_ALLOW_ORIGINS` as its origins when it
    names none; else those origins, `*` by default. Credentials are allowed only for named origins,
    never for `*`.
    """
    env = os.environ if env is None else env
    private = (
        {"allow_private_network": True}
        if env.get("ALLOW_PRIVATE_NETWORK", "").lower() in ("true", "1", "yes")
        else {}
    )
    listed = _origins(graphwright_origins or env.get("CORS_ALLOW_ORIGINS") or "*")
    config = json.loads(env["CORS_CONFIG"]) if env.get("CORS_CONFIG") else http_cors
    if config is None:
        return {
            "allow_origins": listed,
            "allow_methods": ["*"],
            "allow_headers": ["*"],
            "expose_headers": EXPOSED,
            "allow_credentials": "*" not in listed,
            **private,
        }
    unknown = set(config) - OPTIONS
    if unknown:
        raise ConfigurationError(
            f"http.cors: unknown option(s) {sorted(unknown)}; it takes {sorted(OPTIONS)}"
        )
    options = dict(config)
    if "allow_origins" not in options and listed != ["*"]:
        options["allow_origins"] = listed
    if "*" in options.get("allow_origins", []) and options.get("allow_credentials"):
        raise ConfigurationError(
            "http.cors: allow_credentials cannot go with the '*' origin "
            "(any site could act with a signed-in user's cookies); name the origins"
        )
    return {**options, **private}


def allow_origins(
    app: FastAPI, graphwright_origins: str | None, http_cors: Mapping[str, Any] | None = None
) -> None:
    """Answer preflights and tag answers for the origins the settings allow."""
    app.add_middleware(CORSMiddleware, **cors_options(graphwright_origins, http_cors))
