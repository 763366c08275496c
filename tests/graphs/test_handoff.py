"""The pure parts of compaction and token counting: the record's cap, the linear cut, CJK counts."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from graphwright.nodes.handoff import (
    MAX_CHARS,
    ActionDone,
    Handoff,
    bounded,
    cut_index,
    folded_calls,
)
from graphwright.nodes.tokens import approximate, token_counter
from graphwright.offline import OfflineChatModel


def conversation(turns: int) -> list[BaseMessage]:
    out: list[BaseMessage] = [HumanMessage("read everything", id="user-1")]
    for n in range(turns):
        out.append(
            AIMessage(
                "",
                id=f"a{n}",
                tool_calls=[
                    {"name": "read_page", "args": {"page": n}, "id": f"c{n}", "type": "tool_call"}
                ],
            )
        )
        out.append(ToolMessage("x" * 400, tool_call_id=f"c{n}", id=f"t{n}"))
    return out


def test_the_cut_counts_each_message_once_and_never_splits_a_call_from_its_result() -> None:
    messages = conversation(500)
    counted = 0

    def counter(batch: Sequence[BaseMessage]) -> int:
        nonlocal counted
        counted += len(batch)
        return approximate(batch)

    cut = cut_index(messages, 1000, counter)
    assert counted <= len(messages)  # linear: the old cut recounted the whole tail every time
    assert isinstance(messages[cut], AIMessage) and 0 < cut < len(messages)
    assert approximate(messages[cut:]) <= 1000 < approximate(messages[cut - 2 :])


def test_the_record_stays_under_its_cap_and_folds_old_actions_into_ranges() -> None:
    actions = [
        ActionDone(
            call_id=f"c{n}", tool="read_page", args={"page": n}, result="r" * 100, turn="user-1"
        )
        for n in range(1, 501)
    ]
    record = bounded(
        Handoff(
            actions=actions,
            ids=[f"INC-{n}" for n in range(1000, 1100)],
            refs=[f"m{n}" for n in range(1000)],
        )
    )
    assert len(record.model_dump_json()) <= MAX_CHARS
    assert folded_calls(record) == 500 and record.refs_folded + len(record.refs) == 1000
    (entry,) = record.earlier
    assert entry.ranges["page"] == [(1, 500 - len(record.actions))]
    assert record.actions[-1].call_id == "c500" and "INC-1099" in record.ids


def test_cjk_counts_about_a_token_per_character() -> None:
    chinese, english = [HumanMessage("订单到哪了" * 20)], [HumanMessage("abcd" * 25)]
    assert approximate(chinese) >= 100 > approximate(english)


def test_models_without_a_loadable_tokenizer_count_approximately() -> None:
    assert token_counter(OfflineChatModel()) is approximate
    chat = ChatOpenAI(model="gpt-4o-mini", api_key=SecretStr("k"), base_url="http://127.0.0.1:9/v1")
    assert token_counter(chat) is approximate  # tiktoken only with GRAPHWRIGHT_TOKENIZER=tiktoken
