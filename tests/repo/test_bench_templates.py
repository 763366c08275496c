"""The pure parts of `bench.templates`: masking, the key-by-key comparison, the scripted
answers the templates' model gets."""

from __future__ import annotations

import pytest

from bench.templates_compare import Outcome, differences, mask
from bench.templates_scenarios import scenario


def test_mask_hides_what_differs_between_two_runs_and_nothing_else() -> None:
    value = {
        "id": "run-1",
        "messages": [
            {
                "id": "m",
                "content": "Stored memory 0b7a3c9e-1d2f-4e5a-8b6c-7d8e9f0a1b2c",
                "response_metadata": {"id": "chatcmpl-ab12"},
            }
        ],
        "at": "2026-12-07T03:04:06.123+00:00",
        "info": None,
    }
    assert mask(value) == {
        "id": "<id>",
        "messages": [
            {"id": "<id>", "content": "Stored memory <uuid>", "response_metadata": {"id": "<id>"}}
        ],
        "at": "<time>",
        "info": None,
    }


@pytest.mark.parametrize(
    ("ours", "theirs", "found"),
    [
        (
            Outcome(status="success", history=3, output={"a": [1, 2]}),
            Outcome(status="success", history=3, output={"a": [1, 2]}),
            [],
        ),
        (
            Outcome(status="success", history=3, output={"a": [1, 2], "b": 1}),
            Outcome(status="success", history=4, output={"a": [1, 3]}),
            ["output.a[1]: 2 vs 3", "output.b: missing on the reference", "history: 3 vs 4"],
        ),
        (
            Outcome(status="server exited"),
            Outcome(status="success", history=3),
            ["status: server exited vs success"],
        ),
    ],
)
def test_differences_name_each_field_and_output_path(
    ours: Outcome, theirs: Outcome, found: list[str]
) -> None:
    assert differences(ours, theirs) == found


def _tool(name: str) -> dict[str, object]:
    return {"type": "function", "function": {"name": name}}


def test_the_enrichment_model_scrapes_then_submits_then_approves() -> None:
    plan = scenario("enrichment-agent", "http://127.0.0.1:1/page")
    assert plan is not None
    tools = [_tool("scrape_website"), _tool("search"), _tool("Info")]
    first = plan.answer({"messages": [{"role": "user", "content": "go"}], "tools": tools})
    assert first.tool_calls[0]["name"] == "scrape_website"
    scraped = [{"role": "user", "content": "go"}, {"role": "tool", "content": "notes"}]
    assert plan.answer({"messages": scraped, "tools": tools}).tool_calls[0]["name"] == "Info"
    assert plan.answer({"messages": scraped}).content  # scrape_website's note-taking prompt
    verdict = plan.answer({"messages": scraped, "response_format": {"type": "json_schema"}})
    assert '"is_satisfactory": true' in str(verdict.content)


def test_an_unknown_template_has_no_scenario() -> None:
    assert scenario("someone-elses-agent", "http://127.0.0.1:1/") is None
