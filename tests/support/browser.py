"""Headless Chromium for the page tests: Debian's package, which scripts/test installs."""

from __future__ import annotations

import shutil
from typing import Any


def browser_for(p: Any) -> Any:
    chromium = shutil.which("chromium")
    assert chromium, "chromium (Debian package) is installed by scripts/test"
    return p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
