"""The code blocks of README.md and docs/: which to run, write to a file, parse or skip.

A page is read top to bottom as a reader follows it. A fence with a `title="path"` is a
file the reader saves (written into the page's working folder); an untitled `python`
block runs in one namespace per page (later blocks see earlier names); an untitled
`bash` block runs in that folder; an untitled `json` or `yaml` block must parse; a
`text` block is shown output or a diagram, never run. Every other fence is an example the
suite would miss, so it fails `test_every_fence_is_collected`. A block that cannot run
offline says so on the line above it: `<!-- test: skip REASON -->`; a block
marked `<!-- test: served -->` runs while the page's graphs are served over HTTP, its
`http://127.0.0.1:8123` pointed at that service.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tests.support.paths import ROOT

FENCE = re.compile(
    r"^(?P<indent>[ ]*)```(?P<lang>[\w-]*)(?P<attrs>[^\n`]*)\n(?P<body>.*?)^(?P=indent)```[ ]*$",
    re.M | re.S,
)
TITLE = re.compile(r'title="(?P<title>[^"]+)"')
SKIP = re.compile(r"<!--\s*test:\s*skip\b(?P<reason>.*?)-->\s*$")
SERVED = re.compile(r"<!--\s*test:\s*served\s*-->\s*$")
SERVED_URL = "http://127.0.0.1:8123"  # what a served block calls: the port serve's docs use
RUN = {
    "python": "python",
    "py": "python",
    "bash": "bash",
    "sh": "bash",
    "json": "json",
    "yaml": "yaml",
    "yml": "yaml",
    "text": "text",  # shown, never run: output, a diagram, a layout
}
# Any fence opening, as Markdown (and pymdownx.superfences) reads one: ``` or ~~~, indented.
FENCE_OPENING = re.compile(r"^[ ]*(```|~~~)")


@dataclass(frozen=True, kw_only=True)
class Block:
    """One fenced block: where it is, what it is, and what the suite does with it."""

    page: Path
    line: int  # 1-based line of the block's first body line
    lang: str  # python | bash | json | yaml | text | other
    title: str | None
    body: str
    skip: str | None  # the reason given, when the page marks the block as not run
    served: bool  # runs against the page's graphs served over HTTP

    @property
    def runs(self) -> bool:
        """Whether the suite runs it: a file to save, or code to run or parse, not skipped."""
        return self.skip is None and (self.title is not None or self.lang not in ("text", "other"))

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def pages() -> list[Path]:
    """README.md and every Markdown page under docs/ (hooks and hidden folders aside)."""
    docs = [
        p
        for p in sorted((ROOT / "docs").rglob("*.md"))
        if not any(part.startswith(".") for part in p.relative_to(ROOT).parts)
    ]
    return [ROOT / "README.md", *docs]


def blocks(page: Path) -> list[Block]:
    """The page's fenced blocks in reading order."""
    text = page.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        skip = SKIP.search(before)
        title = TITLE.search(match["attrs"])
        indent = len(match["indent"])
        body = "\n".join(line[indent:] for line in match["body"].splitlines()) + "\n"
        found.append(
            Block(
                page=page,
                line=text.count("\n", 0, match.start()) + 2,
                lang=RUN.get(match["lang"].lower(), "other"),
                title=title["title"] if title else None,
                body=body,
                skip=(skip["reason"].strip() or "?") if skip else None,
                served=SERVED.search(before) is not None,
            )
        )
    return found


def fence_lines(page: Path) -> int:
    """How many lines of the page open or close a fence, read line by line: twice the
    number of blocks `blocks` finds, unless a fence escapes its pattern."""
    return sum(
        1 for line in page.read_text(encoding="utf-8").splitlines() if FENCE_OPENING.match(line)
    )
