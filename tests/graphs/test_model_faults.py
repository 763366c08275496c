"""An imperfect model and its server: calls that fail their schema go back to the model, a
failing provider ends the run with one line and the thread's next turn works, and the
requests suit the OpenAI-compatible servers people run locally (the scripted server plays
their faults: HTTP errors, stalls, empty streams, no usage, no `content: null`)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_openai import ChatOpenAI
from pydantic import SecretStr
from typer.testing import CliRunner

from graphwright import Orchestrator
from graphwright.cli import app
from graphwright.graphs.gates import pending_gate
from graphwright.nodes.deps import Limits
from graphwright.nodes.model_call import ModelCall
from graphwright.settings import Settings
from graphwright.testing.scripted_openai import Fault, Reply, ScriptedOpenAI, call
from graphwright.testing.until import scaled
from graphwright_errors import ModelError
from tests.support.agent_rig import AgentRig

EMAIL = {"to": "li@example.com", "subject": "Notes", "body": "The notes are attached."}
GOAL = "Email li@example.com the notes."


def tool_texts(request: dict[str, Any]) -> list[str]:
    return [str(m["content"]) for m in request["messages"] if m["role"] == "tool"]


# --- 1. a call that fails its tool's schema is the model's to fix, never a reviewer's ---


def test_a_call_that_fails_its_schema_goes_back_to_the_model_not_to_the_gate(
    scripted_rig: AgentRig,
) -> None:
    rig = scripted_rig
    rig.script(
        Reply(tool_calls=[call("send_email", {**EMAIL, "to": "example.com"}, "bad")]),
        Reply(tool_calls=[call("send_email", EMAIL, "good")]),
    )
    graph = rig.build()
    out, config = rig.run(graph, GOAL)
    gate = pending_gate(graph, config)
    assert gate is not None and [(c.id, c.args) for c in gate.calls] == [("good", EMAIL)]
    fed_back = tool_texts(rig.server.requests[1])  # type: ignore[union-attr]
    assert len(fed_back) == 1 and "invalid_arguments" in fed_back[0] and "to:" in fed_back[0]
    assert [e["error"]["type"] for e in rig.tool_events(config)] == ["invalid_arguments"]
    assert out["tool_errors"] == 1 and rig.effects() == {}


def test_invalid_calls_spend_the_error_budget_and_never_reach_a_reviewer(
    scripted_rig: AgentRig,
) -> None:
    rig = scripted_rig
    rig.script(
        *[
            Reply(tool_calls=[call("send_email", {**EMAIL, "to": f"nobody{i}"}, f"c{i}")])
            for i in range(2)
        ]
    )
    graph = rig.build(limits=Limits(max_tool_errors=2))
    out, config = rig.run(graph, GOAL)
    assert out["stop_reason"] == "tool_errors" and "__interrupt__" not in out
    assert pending_gate(graph, config) is None and rig.effects() == {}


# --- 2. model errors: retried where safe, then one line; the thread stays usable ---


@pytest.mark.parametrize(
    "fault",
    [Fault(status=500), Fault(status=429), Fault(empty=True)],
    ids=["http-500", "http-429", "empty-reply"],
)
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_a_transient_failure_is_retried_with_backoff(
    scripted_rig: AgentRig,
    fault: Fault,
    stream: bool,
) -> None:
    rig = scripted_rig
    rig.script(fault, fault, Reply(content="Done."))
    waits: list[float] = []
    model = rig.server.chat_model().model_copy(update={"streaming": stream})  # type: ignore[union-attr]
    graph = rig.build(model=model, model_call=ModelCall(sleep=waits.append))
    out, _ = rig.run(graph, "Say done.")
    assert out["stop_reason"] == "answered" and out["answer"] == "Done."
    assert len(waits) == 2 and 0.5 <= waits[0] < waits[1] <= 1.5  # 0.5 s, then 1 s, jittered


def test_a_refused_request_is_not_retried(scripted_rig: AgentRig) -> None:
    rig = scripted_rig
    rig.script(Fault(status=400, message="context length exceeded"))
    waits: list[float] = []
    graph = rig.build(model_call=ModelCall(sleep=waits.append))
    with pytest.raises(ModelError) as caught:
        rig.run(graph, "Say done.")
    assert waits == []
    assert str(caught.value) == (
        f"the model call failed (scripted at {rig.server.base_url}, "  # type: ignore[union-attr]
        "1 attempt): HTTP 400: context length exceeded"
    )


def test_a_model_call_times_out_at_the_turns_deadline(scripted_rig: AgentRig) -> None:
    rig = scripted_rig
    rig.script(Fault(stall_s=scaled(30)))
    model = rig.server.chat_model().model_copy(update={"request_timeout": scaled(30)})  # type: ignore[union-attr]
    graph = rig.build(model=model, limits=Limits(deadline_s=1.5))
    started = time.monotonic()
    with pytest.raises(ModelError, match="1 attempt\\): APITimeoutError"):
        rig.run(graph, "Say done.")
    # The client would have waited 30 s; the deadline had 1.5 s left, and no time to retry.
    assert 1.4 < time.monotonic() - started < scaled(10)


@pytest.fixture
def served(settings: Settings, scripted: ScriptedOpenAI) -> Iterator[Orchestrator]:
    """The Orchestrator with the model graphwright builds for OPENAI_BASE_URL."""
    orch = Orchestrator(
        settings=settings.model_copy(
            update={
                "openai_base_url": scripted.base_url,
                "openai_api_key": SecretStr("k"),
                "openai_max_retries": 1,
                "openai_timeout_s": scaled(10),
            }
        )
    )
    yield orch
    orch.close()


def test_a_failed_model_ends_the_run_failed_and_the_next_turn_works(
    served: Orchestrator,
    scripted: ScriptedOpenAI,
) -> None:
    scripted.load(Fault(status=500, message="upstream overloaded"), Fault(status=502))
    failed = served.invoke("agent", "Say hello.", thread_id="t")
    assert failed.status == "failed" and failed.error == (
        f"the model call failed (gpt-4o-mini at {scripted.base_url}, 2 attempts): "
        "HTTP 502: the server had an error while processing your request"
    )
    scripted.load(Reply(content="Hello again."))
    again = served.invoke("agent", "Say hello again.", thread_id="t")
    assert again.status == "completed" and again.answer == "Hello again."
    last = scripted.requests[-1]["messages"]
    assert [m["content"] for m in last if m["role"] == "user"][-1] == "Say hello again."
    scripted.assert_done()


def test_a_resume_after_a_model_failure_calls_the_model_again(
    served: Orchestrator,
    scripted: ScriptedOpenAI,
) -> None:
    scripted.load(Fault(empty=True), Fault(empty=True))
    assert served.invoke("agent", "Say hello.", thread_id="r").status == "failed"
    scripted.load(Reply(content="Hello."))
    resumed = served.resume("r")
    assert resumed.status == "completed" and resumed.answer == "Hello."
    scripted.assert_done()


def test_the_cli_prints_one_line_for_a_model_error_and_the_next_turn_runs(
    redis_url: str,
    prefix: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: object,
    scripted: ScriptedOpenAI,
) -> None:
    for name, value in {
        "REDIS_URL": redis_url,
        "GRAPHWRIGHT_KEY_PREFIX": prefix,
        "OPENAI_BASE_URL": scripted.base_url,
        "OPENAI_MAX_RETRIES": "0",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("GRAPHWRIGHT_GRAPHS", raising=False)
    monkeypatch.chdir(str(tmp_path))
    scripted.load(Fault(status=500, message="model crashed"))
    failed = CliRunner().invoke(app, ["run", "agent", "Say hello.", "--thread", "c"])
    output = failed.stdout + failed.stderr
    assert failed.exit_code == 1 and "Traceback" not in output, output
    assert "failed: the model call failed (gpt-4o-mini at" in " ".join(output.split())
    assert "HTTP 500: model crashed" in " ".join(output.split())
    scripted.load(Reply(content="Hello."))
    again = CliRunner().invoke(app, ["run", "agent", "Say hello.", "--thread", "c"])
    assert again.exit_code == 0 and "completed (answered) thread c" in again.stdout, again.stdout
    scripted.assert_done()


# --- 3. requests every OpenAI-compatible server takes ---


def test_tools_are_offered_with_tool_choice_auto_and_no_null_content(
    settings: Settings,
) -> None:
    with ScriptedOpenAI(null_content=False, usage=False) as server:  # as llama.cpp's server
        orch = Orchestrator(
            settings=settings.model_copy(
                update={"openai_base_url": server.base_url, "openai_timeout_s": scaled(10)}
            )
        )
        server.load(
            Reply(tool_calls=[call("get_order", {"order_id": "A1001"}, "o1")]),
            Reply(content="A1001 is on its way."),
        )
        result = orch.invoke("agent", "Where is order A1001?")
        orch.close()
        assert result.status == "completed", result.error
        assert [r.get("tool_choice") for r in server.requests] == ["auto", "auto"]
        tool_turn = [m for m in server.requests[1]["messages"] if m.get("tool_calls")]
        assert [m["content"] for m in tool_turn] == [""]
        # The server reported no usage: graphwright counted it, and says so.
        assert result.usage.tokens > 0 and result.usage.tokens_estimated
        server.assert_done()


def test_null_content_is_a_setting_and_llama_cpp_refuses_it(settings: Settings) -> None:
    with ScriptedOpenAI(null_content=False) as server:
        orch = Orchestrator(
            settings=settings.model_copy(
                update={
                    "openai_base_url": server.base_url,
                    "openai_timeout_s": scaled(10),
                    "openai_null_content": True,
                    "openai_max_retries": 0,
                }
            )
        )
        server.load(Reply(tool_calls=[call("get_order", {"order_id": "A1001"}, "o1")]))
        result = orch.invoke("agent", "Where is order A1001?")
        orch.close()
        assert result.status == "failed" and "Expected 'content' to be a string" in str(
            result.error
        )
        assert len(server.rejected) == 1


def test_the_reply_cap_goes_out_under_the_name_each_server_reads(settings: Settings) -> None:
    with ScriptedOpenAI() as server:  # a compatible server: llama.cpp's reads only max_tokens
        orch = Orchestrator(
            settings=settings.model_copy(
                update={
                    "openai_base_url": server.base_url,
                    "openai_timeout_s": scaled(10),
                    "openai_max_tokens": 64,
                }
            )
        )
        server.load(Reply(content="Hi."))
        assert orch.invoke("agent", "Say hi.").status == "completed"
        orch.close()
        assert [(r.get("max_tokens"), "max_completion_tokens" in r) for r in server.requests] == [
            (64, False)
        ]
    from graphwright.models import make_model

    openai = settings.model_copy(
        update={"openai_api_key": SecretStr("sk-test"), "openai_base_url": None}
    )
    for cap, sent in ((None, {}), (64, {"max_completion_tokens": 64})):  # OpenAI's own name
        model = make_model(openai.model_copy(update={"openai_max_tokens": cap}))
        payload = model._get_request_payload("Say hi.")  # type: ignore[attr-defined]
        assert {k: v for k, v in payload.items() if "max" in k} == sent


def test_usage_the_server_reports_is_not_marked_estimated(
    served: Orchestrator,
    scripted: ScriptedOpenAI,
) -> None:
    scripted.load(Reply(content="Hi.", prompt_tokens=70, completion_tokens=5))
    result = served.invoke("agent", "Say hi.")
    assert (result.usage.tokens, result.usage.tokens_estimated) == (75, False)


# --- 4. nothing phones home ---


def test_counting_tokens_for_chat_openai_needs_no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    from graphwright.nodes.tokens import approximate, token_counter

    monkeypatch.delenv("GRAPHWRIGHT_TOKENIZER", raising=False)
    model = ChatOpenAI(
        model="gpt-4o-mini", api_key=SecretStr("k"), base_url="http://127.0.0.1:9/v1"
    )
    assert token_counter(model) is approximate  # tiktoken would fetch its encoding first


@pytest.mark.parametrize(
    ("host", "lookup", "allowed"),
    [
        ("127.0.0.1", False, True),
        ("::1", False, True),
        ("localhost", False, True),
        ("10.0.0.1", False, False),
        ("8.8.8.8", False, False),
        ("example.com", False, False),
        ("10.0.0.1", True, True),  # resolving an address literal asks no server
        ("example.com", True, False),
        (None, True, True),
        (b"localhost", True, True),
    ],
)
def test_the_socket_guard_lets_only_this_machine_through(
    host: str | bytes | None,
    lookup: bool,
    allowed: bool,
) -> None:
    from tests.conftest import on_this_machine

    assert on_this_machine(host, lookup=lookup) is allowed
