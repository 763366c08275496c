"""Deployment files parse, and the demo checkpoints, stops and resumes in two processes."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


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


def test_demo_command_resumes_in_a_second_process(tmp_path: Path) -> None:
    env = {**os.environ, "GRAPHWRIGHT_HOME": str(tmp_path / "home")}
    env.pop("REDIS_URL", None)
    graphwright = Path(os.environ.get("VIRTUAL_ENV", ROOT / ".venv")) / "bin" / "graphwright"
    try:
        out = subprocess.run(
            [str(graphwright), "demo"],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            check=True,
            timeout=120,
        )
        assert "stopped before ['publish']" in out.stdout
        assert "published the report" in out.stdout
        pids = out.stdout.split("processes that ran the steps: ")[1].strip()
        first, second = (int(p) for p in pids.strip("[]").split(","))
        assert first != second
    finally:
        subprocess.run(
            [str(graphwright), "embedded", "stop"],
            env=env,
            cwd=tmp_path,
            check=False,
            capture_output=True,
        )
