"""Each CLI command's output and exit code, including every user error (one line, no traceback)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from graphwright.cli import app

pytestmark = pytest.mark.valkey  # on Valkey, the embedded default's server

EMAIL = 'Email li@example.com with the subject "Weekly report" saying the report is ready.'


@pytest.fixture
def cli(
    redis_url: str, prefix: str, monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> CliRunner:
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("GRAPHWRIGHT_KEY_PREFIX", prefix)
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "GRAPHWRIGHT_GRAPHS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(str(tmp_path))  # no .env from the checkout
    return CliRunner()


def run(cli: CliRunner, *args: str) -> tuple[int, str, str]:
    result = cli.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def assert_user_error(cli: CliRunner, args: list[str], message: str) -> None:
    code, out, err = run(cli, *args)
    assert code == 2, (args, out, err)
    assert err.startswith("error: ") and message in err and err.count("\n") == 1, err
    assert "Traceback" not in out + err


def test_run_streams_steps_and_prints_the_gate_with_commands(cli: CliRunner) -> None:
    code, out, _ = run(cli, "run", "agent", EMAIL, "--thread", "t1")
    assert code == 0
    assert "• plan → send_email(" in out
    assert "thread t1 is waiting for approval" in out and "li@example.com" in out
    assert "graphwright resume t1 --approve" in out and "--reject '<reason>'" in out


def test_resume_approve_completes_and_prints_the_answer(cli: CliRunner) -> None:
    run(cli, "run", "agent", EMAIL, "--thread", "t1")
    code, out, _ = run(cli, "resume", "t1", "--approve")
    assert code == 0
    assert "• act → send_email ok" in out and "completed (answered) thread t1" in out
    assert "Sent 'Weekly report' to li@example.com" in out


def test_resume_edit_and_reject(cli: CliRunner) -> None:
    run(cli, "run", "agent", EMAIL, "--thread", "e")
    new = {"to": "wang@example.com", "subject": "Weekly report", "body": "ready"}
    code, out, _ = run(cli, "resume", "e", "--edit", json.dumps(new), "--json")
    assert code == 0 and json.loads(out)["status"] == "completed"
    assert "wang@example.com" in json.loads(out)["answer"]
    run(cli, "run", "agent", EMAIL, "--thread", "r")
    code, out, _ = run(cli, "resume", "r", "--reject", "wrong week", "--end", "--json")
    assert code == 0 and json.loads(out)["stop_reason"] == "rejected"


def test_inspection_commands_in_text_and_json(cli: CliRunner) -> None:
    run(cli, "run", "agent", "订单 A1001 到哪了？", "--thread", "o")
    code, out, _ = run(cli, "show", "o")
    assert code == 0 and "status completed" in out and "派送中" in out
    assert json.loads(run(cli, "show", "o", "--json")[1])["values"]["stop_reason"] == "answered"
    code, out, _ = run(cli, "history", "o")
    assert code == 0 and "checkpoints of o" in out
    hist = json.loads(run(cli, "history", "o", "--json")[1])
    assert hist[0]["node"] == ["plan"]
    code, out, _ = run(cli, "trace", "o")
    assert code == 0 and "get_tracking" in out
    assert json.loads(run(cli, "trace", "o", "--json")[1])[0]["kind"] == "run_start"
    code, out, _ = run(cli, "threads")
    assert code == 0 and "o" in out and "completed" in out
    assert json.loads(run(cli, "threads", "--json")[1])[0]["thread_id"] == "o"
    code, out, _ = run(cli, "draw", "agent", "--thread", "o", "--format", "ascii")
    assert code == 0 and "visited:" in out and "human_gate" in out
    assert "plan" in json.loads(run(cli, "draw", "agent", "--json")[1])["text"]
    code, out, _ = run(cli, "run", "agent", "订单 A1002 发货了吗？", "--json")
    assert code == 0 and json.loads(out)["status"] == "completed"
    code, out, _ = run(cli, "delete", "o", "--json")
    assert code == 0 and json.loads(out) == {"deleted": "o"}


def test_draw_writes_a_file(cli: CliRunner, tmp_path: object) -> None:
    code, out, _ = run(cli, "draw", "agent", "--format", "html", "-o", "agent.html")
    assert code == 0 and "wrote agent.html" in out


def test_every_user_error_is_one_line_and_exit_2(cli: CliRunner) -> None:
    run(cli, "run", "agent", EMAIL, "--thread", "g")
    assert_user_error(cli, ["run", "nope", "x"], "no graph named 'nope'")
    assert_user_error(cli, ["run", "agent", ""], "bad input: goal")
    assert_user_error(cli, ["run", "agent", "x", "--thread", "g"], "waiting at a gate")
    for command in ("show", "history", "trace", "resume", "delete"):
        assert_user_error(cli, [command, "missing"], "no thread 'missing'")
    assert_user_error(cli, ["resume", "g"], "give a decision")
    assert_user_error(cli, ["resume", "g", "--approve", "--reject", "x"], "choose one of")
    assert_user_error(cli, ["resume", "g", "--edit", "{not json"], "--edit is not valid JSON")
    assert_user_error(
        cli,
        ["resume", "g", "--edit", '{"to": "x"}'],
        "the edited arguments for send_email are invalid",
    )
    assert_user_error(cli, ["draw", "agent", "--format", "png"], "unknown drawing format 'png'")
    assert run(cli, "resume", "g", "--approve")[0] == 0
    assert_user_error(cli, ["resume", "g"], "already finished")
    assert_user_error(cli, ["resume", "g", "--approve"], "not waiting at a gate")


def test_unreachable_redis_is_one_line_and_exit_1(
    cli: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REDIS_URL", "redis://:s3cret@127.0.0.1:1/0")
    monkeypatch.setenv(
        "GRAPHWRIGHT_REDIS_RETRY_S", "0.2"
    )  # the message is the point, not the budget
    code, _, err = run(cli, "threads")
    assert (
        code == 1 and err.startswith("error: ") and "s3cret" not in err and "Traceback" not in err
    )
    assert "set REDIS_URL to a running server" in err  # the advice, where the settings are known
