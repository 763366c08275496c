"""The evaluation harness: the seed suite passes offline, and the report's numbers are computed."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from typer.testing import CliRunner

from graphwright import Orchestrator
from graphwright.cli import app
from graphwright.evals import load_suite, run_suite
from graphwright_errors import UserError


def test_seed_suite_covers_the_three_kinds_with_at_least_20_cases() -> None:
    suite = load_suite("seed")
    kinds = [c.kind for c in suite.cases]
    assert len(suite.cases) >= 20 and {"normal", "boundary", "hostile"} <= set(kinds)
    assert {c.graph for c in suite.cases} == {"agent", "order_support", "orchestrator"}


def test_seed_suite_passes_offline_and_the_report_is_computed(orch: Orchestrator) -> None:
    report = run_suite(orch, load_suite("seed"), runs=2)
    failures = {c.id: c.runs[0].failures for c in report.cases if c.success_rate < 1}
    assert failures == {}
    runs = [o for c in report.cases for o in c.runs]
    assert len(runs) == 2 * len(report.cases)
    assert report.success_rate == 1.0 and report.stability == 1.0
    assert report.mean_model_calls == statistics.fmean(o.model_calls for o in runs)
    assert report.max_model_calls == max(o.model_calls for o in runs) > 0
    assert report.mean_tool_calls == statistics.fmean(len(o.tools) for o in runs)
    assert report.max_wall_s >= report.mean_wall_s > 0
    by_id = {c.id: c for c in report.cases}
    assert by_id["workflow-missing-id"].runs[0].model_calls == 0
    assert by_id["notes-budget"].runs[0].tools == ["search_notes", "calculate"]


def test_a_failing_check_is_reported_with_its_reason(orch: Orchestrator, tmp_path: Path) -> None:
    suite = tmp_path / "suite.json"
    suite.write_text(
        json.dumps(
            {
                "name": "t",
                "runs": 1,
                "cases": [
                    {
                        "id": "mars",
                        "input": "订单 A1001 到哪了？",
                        "checks": {
                            "contains": ["火星"],
                            "tools_never": ["get_tracking"],
                            "max_steps": 1,
                        },
                    },
                    {
                        "id": "ok",
                        "input": "订单 A1002 发货了吗？",
                        "checks": {"contains": ["已付款"]},
                    },
                ],
            }
        )
    )
    report = run_suite(orch, load_suite(str(suite)))
    mars = report.cases[0].runs[0]
    assert not mars.passed
    assert mars.failures == [
        "answer lacks '火星'",
        "get_tracking ran",
        "3 model calls, at most 1 allowed",
    ]
    assert report.success_rate == 0.5


def test_bad_suites_are_user_errors(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="cannot read suite"):
        load_suite(str(tmp_path / "missing.yaml"))
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ncases:\n  - id: a\n    input: hi\n    checks: {contians: [x]}\n")
    with pytest.raises(UserError, match=r"cases\.0\.checks\.contians"):
        load_suite(str(bad))


def test_eval_command_prints_a_table_and_json(
    redis_url: str, prefix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("GRAPHWRIGHT_KEY_PREFIX", prefix)
    monkeypatch.chdir(tmp_path)
    suite = tmp_path / "s.yaml"
    suite.write_text(
        "name: small\nruns: 2\ncases:\n  - id: paid\n    input: 订单 A1002 发货了吗？\n"
        "    checks: {contains: [已付款]}\n"
    )
    result = CliRunner().invoke(app, ["eval", str(suite)])
    assert result.exit_code == 0 and "suite small: 2 run(s) per case" in result.stdout
    assert "success 100%" in result.stdout
    data = json.loads(CliRunner().invoke(app, ["eval", str(suite), "--json", "-n", "1"]).stdout)
    assert data["runs_per_case"] == 1 and data["cases"][0]["runs"][0]["tools"] == ["get_order"]
    suite.write_text(
        "name: small\ncases:\n  - id: x\n    input: 订单 A1002 发货了吗？\n"
        "    checks: {contains: [火星]}\n"
    )
    assert CliRunner().invoke(app, ["eval", str(suite), "-n", "1"]).exit_code == 1
