"""The offline model picks its reply by the purpose sent with each call, not by prompt wording:
reword every prompt and the same runs give the same answers."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from langchain_core.messages import HumanMessage, SystemMessage

import graphwright.graphs.orchestrator as orchestrator_graph
import graphwright.nodes.compact as compact
import graphwright.nodes.order_steps as order_steps
import graphwright.remember as remember
from graphwright import Orchestrator
from graphwright.checkpoints.keys import Keys
from graphwright.nodes.purpose import with_purpose
from graphwright.offline import OfflineChatModel
from tests.graphs.test_agent_compaction import run_pages
from tests.support.agent_rig import AgentRig

REWORDED = {  # same meaning, new first words: nothing a prefix match would recognise
    (orchestrator_graph, "SPLIT_PROMPT"): "You coordinate workers. Divide the job; JSON "
    '{{"subtasks": [...]}}, at most {max}. The workers:\n{workers}',
    (orchestrator_graph, "SYNTH_PROMPT"): "Using the workers' results only, answer the user.",
    (order_steps, "EXTRACT_PROMPT"): 'Which order does the customer mean? JSON {"order_id": ...}.',
    (order_steps, "PHRASE_PROMPT"): "From these facts alone, tell the customer the answer.",
    (compact, "HANDOFF_PROMPT"): "Summarise the folded conversation as a handoff record.",
    (remember, "REMEMBER_PROMPT"): "List what the user wants kept about themselves, as JSON.",
}
RUNS = [  # (graph, goal, user): between them every purpose is used
    ("order_support", "订单 A1001 到哪了？", None),
    ("order_support", "my order is a 1002, has it shipped?", None),
    ("orchestrator", "查一下订单 A1001。明天下午3点安排会议 Design review。", None),
    ("agent", "以后用中文回答。订单 A1001 到哪了？", "ada"),
]


def outcomes(orch: Orchestrator) -> list[tuple[Any, ...]]:
    out = []
    for graph, goal, user in RUNS:
        result = orch.invoke(graph, goal, user_id=user)
        out.append((result.status, result.answer, result.usage.model_calls))
    out.append(tuple(sorted((m.key, m.value) for m in orch.memories("ada"))))
    return out


def test_rewording_every_prompt_changes_no_run(
    orch: Orchestrator, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = outcomes(orch)
    assert (
        all(status == "completed" for status, *_ in before[:-1]) and before[-1]
    )  # a memory stored
    for (module, name), text in REWORDED.items():
        monkeypatch.setattr(module, name, text)
    assert outcomes(orch) == before


def compaction(client: redis.Redis, prefix: str) -> tuple[Any, ...]:
    rig = AgentRig(kind="offline", client=client, keys=Keys(prefix=prefix), server=None)
    out, config = run_pages(rig, 12)
    events = [e for e in rig.trace(config) if e["kind"] == "compaction"]
    return out["answer"], [(e["summary_rejected"], e.get("facts")) for e in events]


def test_rewording_the_handoff_prompt_changes_no_compaction(
    client: redis.Redis, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = compaction(client, f"{prefix}a")
    assert before[1] and all(rejected == [] for rejected, _ in before[1])  # it compacted, cleanly
    monkeypatch.setattr(compact, "HANDOFF_PROMPT", REWORDED[(compact, "HANDOFF_PROMPT")])
    assert compaction(client, f"{prefix}b") == before


@pytest.mark.parametrize(
    ("purpose", "human", "expected"),
    [
        ("extract_order", "it's a 1001", '{"order_id": "A1001"}'),
        ("synthesize", '{"task": "x", "results": [{}, {}]}', "Completed 2 subtasks."),
    ],
)
def test_the_purpose_alone_picks_the_reply(purpose: Any, human: str, expected: str) -> None:
    model = with_purpose(OfflineChatModel(), purpose)
    prompt = [SystemMessage("Any wording at all."), HumanMessage(human)]
    assert model.invoke(prompt).content == expected
    assert "".join(str(c.content) for c in model.stream(prompt)) == expected


def test_without_a_purpose_a_call_is_an_agent_turn() -> None:
    reply = OfflineChatModel().invoke([SystemMessage("Extract the order id"), HumanMessage("2+3")])
    assert "order_id" not in str(reply.content)
