"""Docstrings and comments are Markdown, as mkdocstrings and the CLI's help render them."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

from tests.support.paths import ROOT

SOURCES = ("graphwright", "graphs", "nodes", "tools", "checkpoints", "graphwright_errors", "bench")
# reStructuredText's inline literal (``x``, not a Markdown fence) and its roles (:func:`x`).
RST = re.compile(r"(?<!`)``(?!`)|:(?:func|class|meth|mod|attr|data|exc|obj|ref):`")


def rst_in(source: str) -> list[str]:
    """The strings and comments of `source` that hold reStructuredText markup, by line."""
    found = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in (tokenize.STRING, tokenize.COMMENT) and RST.search(token.string):
            found.append(f"{token.start[0]}: {token.string.splitlines()[0][:80]}")
    return found


def python_files() -> list[Path]:
    return sorted(
        path
        for folder in SOURCES
        for path in (ROOT / folder).rglob("*.py")
        if not path.is_relative_to(ROOT / "graphwright" / "graphs")  # links to the layers
        and not any(path.is_relative_to(ROOT / "graphwright" / layer) for layer in SOURCES[2:5])
    )


def test_the_checker_finds_restructuredtext() -> None:
    assert rst_in('"""Call ``rekey``."""\n')
    assert rst_in("# see :func:`graphwright.run`\n")
    assert not rst_in('"""Call `rekey`; a fence is ```python."""\n')


def test_docstrings_and_comments_use_markdown_backticks() -> None:
    found = {
        str(path.relative_to(ROOT)): hits
        for path in python_files()
        if (hits := rst_in(path.read_text(encoding="utf-8")))
    }
    assert not found, f"use `x` (Markdown), not ``x`` or a role: {found}"
