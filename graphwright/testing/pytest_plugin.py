"""pytest fixtures of `graphwright.testing`.

Load them from a root `conftest.py`: `pytest_plugins = ["graphwright.testing.pytest_plugin"]`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from graphwright.testing.redis_servers import Server, start_server

if TYPE_CHECKING:
    from graphwright.orchestrator import Orchestrator
    from graphwright.testing.scripted_openai import ScriptedOpenAI


@pytest.fixture(scope="session")
def graphwright_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One private redis-server for the session; tests keep apart by key prefix."""
    server = start_server(tmp_path_factory.mktemp("graphwright-redis"))
    yield server
    server.stop()


@pytest.fixture
def scripted_openai() -> Iterator[ScriptedOpenAI]:
    """The scripted model server.

    The test fails if it was sent an invalid request, an unscripted one, or left scripted replies
    unused.
    """
    from graphwright.testing.scripted_openai import ScriptedOpenAI

    with ScriptedOpenAI() as server:
        yield server
        server.assert_done()


@pytest.fixture
def graphwright_graphs() -> Any:
    """Override to give `graphwright_orchestrator` your `GraphRegistry`."""
    return None


@pytest.fixture
def graphwright_orchestrator(
    graphwright_redis: Server, scripted_openai: ScriptedOpenAI, graphwright_graphs: Any
) -> Iterator[Orchestrator]:
    """An Orchestrator on the private Redis under a fresh prefix.

    Its model is the real ChatOpenAI client against `scripted_openai`.
    """
    from graphwright.testing.kit import bound_orchestrator

    with bound_orchestrator(
        graphwright_redis.url, scripted_openai, graphs=graphwright_graphs
    ) as orch:
        yield orch
