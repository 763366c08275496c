"""Start llama-cpp-python's server with every generation capped, as llama.cpp's own server's
`--n-predict` caps it: `python llama_capped.py N SERVER_ARGS...`.

Run by the model's venv (`scripts/real-model`), not graphwright's: it imports nothing of the
project. The cap is needed because the server's `chatml-function-calling` handler calls the
model with no token limit whatever the request's `max_tokens` says; a 135M model can then
ramble to the end of its context, minutes on two cores. The model still says what it says;
it only stops sooner.
"""

from __future__ import annotations

import functools
import runpy
import sys
from typing import Any

from llama_cpp import Llama


def capped(cap: int) -> None:
    """Make `Llama.create_completion` stop after `cap` tokens when a caller set no lower limit."""
    original = Llama.create_completion

    @functools.wraps(original)
    def create_completion(self: Llama, *args: Any, **kwargs: Any) -> Any:
        asked = kwargs.get("max_tokens")
        if asked is None or asked <= 0 or asked > cap:
            kwargs["max_tokens"] = cap
        return original(self, *args, **kwargs)

    Llama.create_completion = create_completion  # type: ignore[method-assign]


if __name__ == "__main__":
    capped(int(sys.argv[1]))
    sys.argv = [sys.argv[0], *sys.argv[2:]]
    runpy.run_module("llama_cpp.server", run_name="__main__")
