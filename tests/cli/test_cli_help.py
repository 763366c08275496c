"""What a person reads from the CLI: help with its Markdown rendered, times as UTC dates."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime

import pytest
import typer
from typer.testing import CliRunner

from graphwright.cli import app

# Raw markup: a backtick or bold stars Rich did not render, or any reStructuredText.
RAW_MARKUP = re.compile(
    r"`|\*\*|:(func|class|meth|mod|attr|data|exc|obj|ref):|^\s*\.\. \w+::", re.M
)


def every_command() -> list[list[str]]:
    """The argument paths of every command and group, the root included."""
    found: list[list[str]] = []

    def walk(command: object, path: list[str]) -> None:
        found.append(path)
        for name, sub in (getattr(command, "commands", None) or {}).items():
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return found


@pytest.mark.parametrize("path", every_command(), ids=lambda p: " ".join(p) or "graphwright")
def test_help_renders_its_markup(path: list[str]) -> None:
    result = CliRunner().invoke(app, [*path, "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert not RAW_MARKUP.search(result.output), (
        f"graphwright {' '.join(path)} --help:\n{result.output}"
    )


@pytest.fixture
def cli(
    redis_url: str, prefix: str, monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> CliRunner:
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("GRAPHWRIGHT_KEY_PREFIX", prefix)
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "GRAPHWRIGHT_GRAPHS", "GRAPHWRIGHT_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(str(tmp_path))  # no .env or langgraph.json from the checkout
    return CliRunner()


def test_threads_shows_when_each_thread_was_updated_as_a_utc_date_and_time(
    cli: CliRunner,
) -> None:
    before = time.time()
    assert (
        cli.invoke(app, ["run", "agent", "Where is order A1001?", "--thread", "o"]).exit_code == 0
    )
    result = cli.invoke(app, ["threads"], terminal_width=200)
    assert result.exit_code == 0, result.output
    row = next(line for line in result.output.splitlines() if " o " in line)
    shown = re.search(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC", row)
    assert shown, f"no UTC date and time in {row!r}"
    assert not re.search(r"\b\d{10}\b", row), f"a Unix timestamp in {row!r}"
    when = datetime.strptime(shown[0], "%Y-%m-%d %H:%M:%S UTC").replace(tzinfo=UTC).timestamp()
    assert before - 1 <= when <= time.time() + 1
    listed = cli.invoke(app, ["threads", "--json"]).stdout  # programs keep the number
    assert (
        '"updated_at": ' in listed
        and before - 1 <= float(re.search(r'"updated_at": ([\d.]+)', listed)[1]) <= time.time() + 1
    )  # type: ignore[index]


def test_worker_help_names_the_workers_default_jobs() -> None:
    """`worker --help` states the default its jobs take (`settings.WORKER_JOBS`), which the
    help cannot import without loading the settings' dependencies."""
    from graphwright.settings import WORKER_JOBS

    result = CliRunner().invoke(app, ["worker", "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert f"[default: {WORKER_JOBS}]" in result.output, result.output
