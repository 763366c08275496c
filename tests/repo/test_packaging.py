"""Deployment files parse, and a new user's README sequence works in a fresh clone."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from graphwright.testing.until import scaled
from tests.support.paths import ROOT

# Slow: a fresh clone runs ./scripts/demo: a venv, an install, the README's path
pytestmark = pytest.mark.slow


def test_docker_compose_file_is_valid_and_wires_redis() -> None:
    compose = shutil.which("docker-compose")
    assert compose, "docker-compose (Debian package) is installed by scripts/test"
    out = subprocess.run(
        [compose, "-f", str(ROOT / "docker-compose.yml"), "config"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    config = yaml.safe_load(out.stdout)
    redis_service = config["services"]["redis"]
    assert ":" in redis_service["image"] and not redis_service["image"].endswith(":latest")
    assert "--appendonly" in redis_service["command"]
    assert redis_service["healthcheck"]["test"]
    api = config["services"]["api"]
    assert api["environment"]["REDIS_URL"] == "redis://redis:6379/0"
    assert api["depends_on"]["redis"]["condition"] == "service_healthy"
    assert api["command"][0] == "serve" and "--queue" in api["command"]
    worker = config["services"]["worker"]
    assert worker["command"] == ["worker"]
    assert worker["environment"]["REDIS_URL"] == "redis://redis:6379/0"
    assert worker["depends_on"]["redis"]["condition"] == "service_healthy"


def readme_commands() -> tuple[str, list[str]]:
    """The first README command (the main job) and the follow-up commands it documents."""
    blocks = re.findall(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    lines = [[ln.split("  #")[0].strip() for ln in b.splitlines() if ln.strip()] for b in blocks]
    return lines[0][0], lines[1]


def test_a_new_user_runs_the_readme_commands_in_a_fresh_clone(tmp_path: Path) -> None:
    """Fresh clone, README command 1, then the three follow-ups, each as written."""
    main_job, follow_ups = readme_commands()
    assert main_job == "./scripts/demo" and len(follow_ups) == 3
    clone = tmp_path / "clone"
    subprocess.run(
        ["git", "clone", "--quiet", str(ROOT), str(clone)], check=True, timeout=scaled(120)
    )
    venv_bin = str(Path(sys.executable).parent)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("REDIS_URL", "OPENAI_", "GRAPHWRIGHT_", "VIRTUAL_ENV"))
    }
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if p != venv_bin)

    def sh(command: str) -> str:
        # Its own process group, killed whole on a timeout: the shell's children too.
        proc = subprocess.Popen(
            command,
            shell=True,
            cwd=clone,
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            out, err = proc.communicate(timeout=scaled(600))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            raise AssertionError(
                f"{command} did not finish in {scaled(600):.0f} s\n{out}\n{err}"
            ) from None
        assert proc.returncode == 0, f"{command}\n{out}\n{err}"
        return out

    try:
        first = sh(main_job)
        assert "thread demo is waiting for approval" in first and "send_email" in first
        resumed, drawn, traced = (sh(c) for c in follow_ups)
        assert "Sent 'Weekly report' to li@example.com" in resumed
        page = (clone / "demo.html").read_text()
        assert "wrote demo.html" in drawn and "class human_gate" not in page
        assert "human_gate,act,observe visited;" in page and "mermaid.initialize" in page
        assert "send_email" in traced and "answered" in traced
        again = sh(main_job)  # the main job can be run again: --replace starts it afresh
        assert "waiting for approval" in again
    finally:
        stop_embedded(clone, env)


def stop_embedded(clone: Path, env: dict[str, str]) -> None:
    """Stop the clone's embedded server, and kill it by its pid if that did not (no venv yet,
    a hung stop): a failed test leaves nothing running."""
    if (clone / ".venv" / "bin" / "graphwright").exists():
        subprocess.run(
            [".venv/bin/graphwright", "embedded", "stop"],
            cwd=clone,
            env=env,
            capture_output=True,
            check=False,
            timeout=scaled(60),
        )
    home = clone / ".graphwright"
    pidfile = home / "redis.pid"
    if pidfile.exists():
        pid = int(pidfile.read_text().strip() or 0)
        try:  # the server works in its home: a pid reused by another process is left alone
            if pid and os.readlink(f"/proc/{pid}/cwd") == str(home.resolve()):
                os.kill(pid, signal.SIGKILL)
        except (FileNotFoundError, ProcessLookupError):
            pass  # already gone
