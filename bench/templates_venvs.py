"""The two venvs `bench.templates` serves a LangGraph template from, made once and reused.

`graphwright`: this tree's wheel (built by the installer from the source, no extras) and
the template, `pip install -e` as its README says. `reference`: `langgraph-cli[inmem]`
and the template. Each is rebuilt only when what it was built from changed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [
    "pyproject.toml",
    "graphwright",
    "graphs",
    "nodes",
    "tools",
    "checkpoints",
    "graphwright_errors",
]
REFERENCE = "langgraph-cli[inmem]"
INSTALL_TIMEOUT_S = 900


@dataclass(frozen=True, kw_only=True)
class Venv:
    """A venv ready to serve a template, or why it could not be made."""

    kind: str  # "graphwright" or "reference"
    path: Path
    error: str | None = None  # the installer's own reason, shortened

    @property
    def ok(self) -> bool:
        return self.error is None

    def bin(self, name: str) -> Path:
        return self.path / "bin" / name


def ensure(kind: str, template: Path, base: Path) -> Venv:
    """The venv of `kind` for `template` under `base`, made or reused."""
    path = base / template.name / kind
    stamp = _stamp(kind, template)
    stamp_file = path / ".templates-stamp"
    if stamp_file.exists() and stamp_file.read_text() == stamp:
        failed = path / ".templates-failed"
        return Venv(kind=kind, path=path, error=failed.read_text() if failed.exists() else None)
    if path.exists():
        shutil.rmtree(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    first = (
        [str(ROOT), "--reinstall-package", "graphwright"] if kind == "graphwright" else [REFERENCE]
    )
    error = _install(path, [*first, "-e", str(template)])
    if error is not None:
        (path / ".templates-failed").write_text(error)
    stamp_file.write_text(stamp)
    return Venv(kind=kind, path=path, error=error)


def _stamp(kind: str, template: Path) -> str:
    """What the venv is built from.

    The template's requirements and, for graphwright's, the files its wheel is built from (committed
    and not).
    """
    digest = hashlib.sha256(kind.encode())
    digest.update((template / "pyproject.toml").read_bytes())
    if kind == "graphwright":
        for args in (["ls-files", "-s", "--", *SOURCES], ["status", "--porcelain", "--", *SOURCES]):
            digest.update(
                subprocess.run(["git", *args], cwd=ROOT, capture_output=True, check=True).stdout
            )
    return digest.hexdigest()


def _install(path: Path, requirements: list[str]) -> str | None:
    """Make the venv at `path` and install into it; None, or the installer's reason."""
    uv = ROOT / ".venv" / "bin" / "uv"
    python = path / "bin" / "python"
    if uv.exists():
        env = {**os.environ, "UV_SYSTEM_CERTS": "1", "VIRTUAL_ENV": str(path)}
        steps = [
            [str(uv), "venv", "-q", "--python", sys.executable, str(path)],
            [str(uv), "pip", "install", "-q", "--python", str(python), *requirements],
        ]
    else:
        env = dict(os.environ)
        plain = [r for r in requirements if r != "--reinstall-package" and r != "graphwright"]
        steps = [
            [sys.executable, "-m", "venv", str(path)],
            [str(python), "-m", "pip", "install", "-q", *plain],
        ]
    for step in steps:
        done = subprocess.run(
            step, capture_output=True, text=True, env=env, timeout=INSTALL_TIMEOUT_S, check=False
        )
        if done.returncode != 0:
            return _reason(done.stderr or done.stdout)
    return None


def _reason(output: str) -> str:
    """The installer's conclusion: its error line and the conflict it names."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    picked = [
        line
        for line in lines
        if line.startswith(("error", "ERROR")) or "depends on" in line or "conflict" in line.lower()
    ]
    return " ".join(picked or lines[-3:])[:1500]


def versions(venv: Venv) -> str:
    """The LangGraph packages installed in `venv`, as `name version` pairs."""
    code = (
        "import importlib.metadata as m\n"
        "for name in ('graphwright', 'langgraph', 'langgraph-api', 'langchain-core'):\n"
        "    try: print(name, m.version(name))\n"
        "    except m.PackageNotFoundError: pass\n"
    )
    done = subprocess.run(
        [str(venv.bin("python")), "-c", code],
        capture_output=True,
        cwd=venv.path,
        text=True,
        check=False,
    )  # not this tree's metadata
    return ", ".join(done.stdout.split("\n")[:-1]) if done.returncode == 0 else "?"
