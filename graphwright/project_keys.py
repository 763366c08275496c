"""Which `langgraph.json` keys graphwright honours and which it refuses, with the message.

Every key `langgraph dev` reads is one or the other, never dropped (`docs/langgraph-json.md` is this
table for people).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

HONOURED = "honoured"
BUILD = "build"  # shapes the image `langgraph build` makes; `langgraph dev` does not use it

# Top-level keys. A section (a dict value) has its own table below.
TOP: dict[str, str] = {
    "$schema": HONOURED,  # an editor's hint
    "graphs": HONOURED,
    "dependencies": HONOURED,
    "env": HONOURED,
    "store": HONOURED,
    "checkpointer": HONOURED,
    "auth": HONOURED,
    "http": HONOURED,
    "disable_persistence": HONOURED,  # only false; see VALUES
    **dict.fromkeys(
        (
            "python_version",
            "api_version",
            "base_image",
            "image_distro",
            "pip_config_file",
            "pip_installer",
            "source",
            "dockerfile_lines",
            "keep_pkg_tools",
        ),
        BUILD,
    ),
    "node_version": "JS graphs are not served by graphwright (nor by langgraph dev); remove "
    "node_version",
    "webhooks": "the webhooks section (env_prefix, url policy, headers) is not implemented; "
    "graphwright's webhook policy is GRAPHWRIGHT_WEBHOOK_ALLOW: remove the section",
    "ui": "generative UI components are not served by graphwright; remove ui",
    "ui_config": "generative UI components are not served by graphwright; remove ui_config",
    "encryption": "custom encryption is not implemented; graphwright encrypts with "
    "GRAPHWRIGHT_ENCRYPT and GRAPHWRIGHT_ENCRYPTION_KEYS: remove encryption",
    "priority": "run priority is not implemented; remove priority",
}

SECTIONS: dict[str, dict[str, str]] = {
    "store": {"index": HONOURED, "ttl": HONOURED},
    "store.index": {"dims": HONOURED, "embed": HONOURED, "fields": HONOURED},
    "store.ttl": {
        "refresh_on_read": HONOURED,
        "default_ttl": HONOURED,
        "sweep_interval_minutes": HONOURED,
    },  # Redis expires keys: no sweep needed
    "checkpointer": {
        "ttl": HONOURED,
        "path": "a custom checkpointer is not used: graphwright checkpoints to Redis; remove "
        "checkpointer.path",
        "serde": "a custom serializer is not used: graphwright's is fixed; remove "
        "checkpointer.serde",
    },
    "checkpointer.ttl": {
        "strategy": HONOURED,
        "default_ttl": HONOURED,
        "sweep_interval_minutes": HONOURED,
        "sweep_limit": HONOURED,
    },
    "auth": {
        "path": HONOURED,
        "disable_studio_auth": HONOURED,  # graphwright has no Studio bypass: always as if true
        "openapi": "auth.openapi is not read: graphwright's API docs describe no security "
        "schemes; remove it",
        "cache": "auth.cache is not implemented: the authenticate handler runs on every "
        "request; remove it",
    },
    "http": {
        "app": HONOURED,
        "cors": HONOURED,
        "mount_prefix": HONOURED,
        "configurable_headers": HONOURED,
        **dict.fromkeys(
            (
                "disable_assistants",
                "disable_threads",
                "disable_runs",
                "disable_store",
                "disable_meta",
                "disable_webhooks",
            ),
            HONOURED,
        ),
        "disable_mcp": HONOURED,  # no /mcp
        "disable_a2a": HONOURED,  # no /a2a nor agent cards
        "disable_ui": HONOURED,  # nor a /ui one
        "enable_custom_route_auth": HONOURED,  # http.app is always behind the API's auth
        "logging_headers": "http.logging_headers is not implemented; remove it",
        "middleware_order": "http.middleware_order is not implemented: http.app's routes are "
        "always behind the API's auth; remove it",
    },
    "http.cors": dict.fromkeys(
        (
            "allow_origins",
            "allow_methods",
            "allow_headers",
            "allow_credentials",
            "allow_origin_regex",
            "expose_headers",
            "max_age",
        ),
        HONOURED,
    ),
    "http.configurable_headers": dict.fromkeys(
        ("includes", "excludes", "include", "exclude"), HONOURED
    ),
}

# Values of honoured keys that graphwright cannot do: (key, value) -> why.
VALUES: dict[tuple[str, Any], str] = {
    ("disable_persistence", True): "disable_persistence: true is not implemented: graphwright "
    "always persists to Redis; remove it",
    ("checkpointer.ttl.strategy", "keep_latest"): "checkpointer.ttl.strategy 'keep_latest' is "
    "not implemented; use 'delete'",
}


GRAPH_KEYS = frozenset({"path", "description"})  # a graph given as an object


def refusal(raw: Mapping[str, Any]) -> str | None:
    """The one-line reason graphwright will not serve this `langgraph.json`, or None."""
    graphs = raw.get("graphs")
    for name, entry in graphs.items() if isinstance(graphs, Mapping) else ():
        unknown = sorted(set(entry) - GRAPH_KEYS) if isinstance(entry, Mapping) else []
        if unknown:
            return (
                f"langgraph.json: graphs.{name}: unknown key {unknown[0]!r}; a graph "
                "object takes path and description"
            )
    return _walk(raw, "", TOP)


def _walk(section: Mapping[str, Any], where: str, table: Mapping[str, str]) -> str | None:
    for key, value in section.items():
        name = f"{where}{key}"
        verdict = table.get(key)
        if verdict is None:
            known = ", ".join(sorted(k for k in table if not k.startswith("$")))
            return f"langgraph.json: unknown key {name!r}; known here: {known}"
        if verdict not in (HONOURED, BUILD):
            return f"langgraph.json: {name}: {verdict}"
        if isinstance(value, bool | str) and (name, value) in VALUES:
            return f"langgraph.json: {VALUES[(name, value)]}"
        found = (
            _walk(value, f"{name}.", SECTIONS[name])
            if isinstance(value, Mapping) and name in SECTIONS
            else None
        )
        if found is not None:
            return found
    return None
