"""The settings page is generated from the `Settings` model and kept current."""

from __future__ import annotations

import runpy

from tests.support.paths import ROOT


def test_the_settings_page_is_the_one_the_model_generates() -> None:
    script = runpy.run_path(str(ROOT / "scripts" / "settings_doc.py"))
    page = ROOT / "docs" / "reference" / "settings.md"
    assert page.read_text(encoding="utf-8") == script["render"](), (
        "docs/reference/settings.md is stale: run python scripts/settings_doc.py"
    )


def test_every_setting_is_on_the_page_with_its_description() -> None:
    from graphwright.settings import Settings

    page = (ROOT / "docs" / "reference" / "settings.md").read_text(encoding="utf-8")
    for name, info in Settings.model_fields.items():
        assert info.description, f"Settings.{name} needs a description (it is the docs)"
        assert f"`{info.validation_alias}`" in page and info.description in page
