"""Test your own graphs the way graphwright tests its own.

On a private redis-server, against a scripted OpenAI-compatible server that enforces the API's
message rules (HTTP 400 on an invalid message sequence), through an Orchestrator bound to both.

Without pytest::

    with redis_server() as redis, ScriptedOpenAI() as model:
        model.load(Reply(content="hello"))
        with bound_orchestrator(redis.url, model, graphs=my_graphs) as orch:
            ...

With pytest, add `pytest_plugins = ["graphwright.testing.pytest_plugin"]` to your root
`conftest.py` for the fixtures `graphwright_redis`, `scripted_openai` and
`graphwright_orchestrator` (opt-in rather than an entry point: the kit imports the
Orchestrator, and LangGraph with it, which no other pytest session in the environment
should pay). `until`, `scaled` and `wait_exit` wait on conditions with limits
stretched by `GRAPHWRIGHT_TEST_SLOWDOWN`.
"""

from graphwright.testing.kit import bound_orchestrator, settings_for
from graphwright.testing.openai_rules import violation
from graphwright.testing.redis_servers import Server, free_port, redis_server, start_server
from graphwright.testing.scripted_openai import Reply, ScriptedOpenAI, call
from graphwright.testing.until import scaled, slowdown, until, wait_exit

__all__ = [
    "Reply",
    "ScriptedOpenAI",
    "Server",
    "bound_orchestrator",
    "call",
    "free_port",
    "redis_server",
    "scaled",
    "settings_for",
    "slowdown",
    "start_server",
    "until",
    "violation",
    "wait_exit",
]
