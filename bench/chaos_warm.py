"""Imported once by the campaign's fork server: pays the first-use costs of a run up front.

The model client (its HTTP client and TLS context), the settings machinery and graph
compilation are set up once here, so every forked command starts at its own work.
"""

from __future__ import annotations

import redis

from bench.chaos_graphs import register
from graphwright.checkpoints.keys import Keys
from graphwright.checkpoints.redis import RedisSaver
from graphwright.graphs.registry import GraphContext, default_registry
from graphwright.models import make_model
from graphwright.nodes.deps import Limits
from graphwright.settings import Settings


def warm() -> None:
    settings = Settings(
        _env_file=None,
        OPENAI_BASE_URL="http://127.0.0.1:9/v1",  # type: ignore[call-arg]
        OPENAI_API_KEY="warm-up",
    )
    graphs = default_registry()
    register(graphs)
    client = redis.Redis()  # never connected: compiling sends no command
    context = GraphContext(
        model=make_model(settings),
        redis_client=client,
        keys=Keys(),
        checkpointer=RedisSaver(client),
        limits=Limits(),
    )
    graphs.get("chaos_ungated").build(context)


warm()
