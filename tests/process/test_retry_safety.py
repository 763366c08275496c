"""Writes that are safe to repeat: a reply lost after the write ran makes the client send
it again, and the second one changes nothing (a TCP proxy cuts the connection right after
the server ran the command)."""

from __future__ import annotations

import hashlib
import json

from langgraph.checkpoint.conformance.test_utils import generate_checkpoint, generate_metadata

from graphwright import Orchestrator
from graphwright.aconnect import async_twin
from graphwright.checkpoints.keys import Keys, escape
from graphwright.checkpoints.redis import RedisSaver
from graphwright.checkpoints.scripts import SHAS
from graphwright.connect import connect
from graphwright.offline import OfflineChatModel
from graphwright.server.records.event_log import EventLog
from graphwright.server.records.run_scripts import PUBLISH
from graphwright.server.records.run_steps import RunSteps
from graphwright.server.records.run_store import RunStore
from graphwright.server.schemas.run_bodies import RunCreate
from graphwright.settings import Settings
from graphwright.testing.redis_servers import Server
from graphwright.tools.runloop import call
from tests.support.reply_proxy import reply_proxy

ORDER = "订单 A1001 到哪了？"


def test_a_replayed_first_put_still_lists_the_thread_and_its_run(
    redis_server: Server,
    prefix: str,
) -> None:
    with reply_proxy(redis_server.port, b"ZREMRANGEBYLEX") as proxy:
        client = connect(proxy.url, retry_budget_s=10)
        saver = RedisSaver(client, prefix=prefix)
        config = {"configurable": {"thread_id": "lost", "checkpoint_ns": ""}}
        saver.put(config, generate_checkpoint(), generate_metadata(run_id="r1"), {})  # type: ignore[arg-type]
        assert proxy.dropped == [b"ZREMRANGEBYLEX"]  # the first put's reply was lost, once
        k = saver.keys
        assert client.zscore(k.thread_ids(), escape("lost")) is not None
        assert client.zscore(k.threads(), escape("lost")) is not None
        assert client.sismember(k.run("r1"), escape("lost"))
        assert [t.config["configurable"]["thread_id"] for t in saver.list(None)] == ["lost"]
        client.close()


def test_a_replayed_trace_write_and_first_put_keep_the_usage_exact(
    redis_server: Server,
    prefix: str,
) -> None:
    def orchestrator(url: str) -> Orchestrator:
        settings = Settings(_env_file=None, REDIS_URL=url, GRAPHWRIGHT_KEY_PREFIX=prefix)  # type: ignore[call-arg]
        return Orchestrator(settings=settings, model=OfflineChatModel())

    plain = orchestrator(redis_server.url)
    expected = plain.invoke("agent", ORDER, thread_id="reference").usage
    assert expected.model_calls >= 1
    with reply_proxy(redis_server.port, SHAS["put"].encode(), b'"model_call"') as proxy:
        orch = orchestrator(proxy.url)
        result = orch.invoke("agent", ORDER, thread_id="replayed")
        assert sorted(proxy.dropped) == sorted([SHAS["put"].encode(), b'"model_call"'])
        assert result.status == "completed"
        assert result.usage == expected  # the model call the client sent twice counts once
        kinds = [e["kind"] for e in orch.trace("replayed")]
        assert kinds.count("model_call") == expected.model_calls
        assert "replayed" in {t.thread_id for t in orch.threads()}
        orch.client.close()
    plain.client.close()


def test_a_replayed_publish_adds_the_event_once(redis_server: Server, prefix: str) -> None:
    """An executor's publish whose reply was lost is sent again by the run loop's client
    (its retry), and the event is added once."""
    sha = hashlib.sha1(PUBLISH.encode()).hexdigest().encode()
    with reply_proxy(redis_server.port) as proxy:
        client = connect(proxy.url, retry_budget_s=10)
        store = RunStore(client, Keys(prefix=prefix))
        steps = RunSteps(store, async_twin(client, retry_budget_s=10))
        run = store.create("t", RunCreate(assistant_id="agent"), queue=False)

        async def publish_three() -> None:
            assert await steps.pickup("t", run.run_id, "me") == "start"
            client.script_load(PUBLISH)  # so the lost reply is one of a publish that ran
            proxy.drop_after.append(sha)
            for i in range(3):
                assert await steps.publish("t", run.run_id, "me", "values", {"i": i})
            await steps.client.aclose()

        call(publish_three())
        assert proxy.dropped == [sha]
        seen = [
            json.loads(d)["i"]
            for _, _, d in EventLog(client, Keys(prefix=prefix), "t", run.run_id).read(follow=False)
        ]
        assert seen == [0, 1, 2]  # every event once, in order
        client.close()
