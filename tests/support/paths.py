"""Where the suite's files are, whichever folder a test is in."""

from __future__ import annotations

from pathlib import Path

SUPPORT = Path(__file__).resolve().parent
"""This package: the helpers and the projects, pages and scripts the tests serve."""
ROOT = SUPPORT.parents[1]
"""The repository."""
