"""A threading HTTP server for scripted model servers that a killed client leaves quiet.

A crash campaign kills clients mid-request: a body cut short, or a client gone before its
answer is written. `socketserver` prints a traceback for each; these are the test's own
doing, so they are dropped. Any other error is printed as before.
"""

from __future__ import annotations

import sys
from http.server import ThreadingHTTPServer
from typing import Any


class QuietHTTPServer(ThreadingHTTPServer):
    """`ThreadingHTTPServer` that drops the errors of a client that went away."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError | ValueError):  # gone, or cut short
            return
        super().handle_error(request, client_address)
