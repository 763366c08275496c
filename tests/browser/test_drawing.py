"""Drawing never touches the network; the HTML page renders every node in headless Chromium."""

from __future__ import annotations

import ipaddress
import shutil
import socket
from pathlib import Path

import pytest

from graphwright import Orchestrator
from graphwright.drawing import FORMATS
from graphwright.testing.until import scaled
from graphwright_errors import ConfigurationError, UserError

# Slow: headless Chromium rendering the HTML drawing
pytestmark = pytest.mark.slow

NODES = ("plan", "act", "observe", "compact", "human_gate")
EMAIL = 'Email li@example.com with the subject "Weekly report" saying the report is ready.'


def test_every_format_draws_with_loopback_sockets_only(
    orch: Orchestrator, monkeypatch: pytest.MonkeyPatch
) -> None:
    orch.invoke("agent", EMAIL, thread_id="d")
    seen: list[object] = []
    original = socket.socket.connect

    def record(self: socket.socket, address: object) -> object:
        seen.append(address)
        return original(self, address)  # type: ignore[arg-type]

    monkeypatch.setattr(socket.socket, "connect", record)
    for fmt in FORMATS:
        for thread in (None, "d"):
            text = orch.draw("agent", fmt, thread)  # type: ignore[arg-type]
            for node in NODES:
                assert node in text, (fmt, node)
    remote = [
        a for a in seen if isinstance(a, tuple) and not ipaddress.ip_address(a[0]).is_loopback
    ]
    assert remote == []


def test_mermaid_with_a_thread_marks_the_path_and_the_pending_gate(orch: Orchestrator) -> None:
    orch.invoke("agent", EMAIL, thread_id="d")
    text = orch.draw("agent", "mermaid", "d")
    assert "class human_gate gate;" in text
    assert "class __start__,plan visited;" in text
    plain = orch.draw("agent", "mermaid")
    assert (
        "classDef gate" not in plain and "plan -. &nbsp;human_gate&nbsp; .-> human_gate;" in plain
    )
    ascii_art = orch.draw("agent", "ascii", "d")
    assert "pending gate: waiting for a decision" in ascii_art


def test_svg_without_graphviz_names_the_package(
    orch: Orchestrator, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert shutil.which("dot"), "graphviz is installed by scripts/test"
    svg = orch.draw("agent", "svg")
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ConfigurationError, match="install the graphviz package"):
        orch.draw("agent", "svg")


def test_unknown_format_and_thread_are_user_errors(orch: Orchestrator) -> None:
    with pytest.raises(UserError, match="unknown drawing format 'png'"):
        orch.draw("agent", "png")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="no thread 'x' of graph 'agent'"):
        orch.draw("agent", "mermaid", "x")


def test_html_page_renders_every_node_in_headless_chromium(
    orch: Orchestrator, tmp_path: Path
) -> None:
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium")
    assert chromium, "chromium (Debian package) is installed by scripts/test"
    orch.invoke("agent", EMAIL, thread_id="h")
    page_file = tmp_path / "agent.html"
    page_file.write_text(orch.draw("agent", "html", "h"), encoding="utf-8")
    requests: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page()
        page.on("request", lambda r: requests.append(r.url))
        page.goto(page_file.as_uri())
        page.wait_for_selector("pre.mermaid svg", timeout=scaled(30_000))
        svg = page.inner_html("pre.mermaid")
        legend = page.inner_text("p.legend")
        browser.close()
    for node in NODES:
        assert f">{node}<" in svg or node in svg
    assert "human_gate" in svg and "pending gate" in legend
    assert all(url.startswith(("file:", "data:")) for url in requests), requests
