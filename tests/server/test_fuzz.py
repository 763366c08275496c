"""A small schemathesis run over every operation of `/openapi.json` (`bench/fuzz.py` runs
the big one): no answer is a 5xx and every answer matches its documented schema."""

from __future__ import annotations

import pytest

from bench import fuzz_auth
from bench.fuzz import KEY, fuzz
from graphwright import Orchestrator
from graphwright.offline import OfflineChatModel
from graphwright.settings import Settings
from graphwright.testing.service import running

# Slow: every operation fuzzed against a running service
pytestmark = pytest.mark.slow


def test_fuzzing_every_operation_finds_no_server_error_and_no_schema_violation(
    settings: Settings,
) -> None:
    quiet = Settings(
        _env_file=None,
        REDIS_URL=settings.redis_url,  # type: ignore[call-arg]
        GRAPHWRIGHT_KEY_PREFIX=settings.key_prefix,
        GRAPHWRIGHT_RUN_RATE=0,
    )
    with running(Orchestrator(settings=quiet, model=OfflineChatModel()), api_key=KEY) as svc:
        result = fuzz(svc.url, max_examples=3, phases="fuzzing,stateful")
    assert not result.failed, result.output[-4000:]
    assert result.number(r"Tested: (\d+)") >= 20
    assert result.number(r"(\d+) generated") >= 60


def test_fuzzing_under_custom_auth_with_stateful_links_finds_no_server_error(
    settings: Settings,
) -> None:
    """Bounded (about half a minute): fuzzing then stateful sequences that follow the links
    between operations (a created thread's id into its runs, ...), as one Auth user."""
    quiet = Settings(
        _env_file=None,
        REDIS_URL=settings.redis_url,  # type: ignore[call-arg]
        GRAPHWRIGHT_KEY_PREFIX=settings.key_prefix,
        GRAPHWRIGHT_RUN_RATE=0,
    )
    with running(
        Orchestrator(settings=quiet, model=OfflineChatModel()), auth=fuzz_auth.auth
    ) as svc:
        result = fuzz(
            svc.url,
            max_examples=4,
            phases="fuzzing,stateful",
            header=f"Authorization: Bearer {fuzz_auth.TOKEN}",
        )
    print(f"schemathesis sent {result.requests} requests under custom auth")
    assert not result.failed, result.output[-4000:]
    assert result.number(r"Tested: (\d+)") >= 60
    assert result.requests >= 200
