"""Who is calling and what they may do.

Authentication, authorization, the rules for browsers.
"""

from __future__ import annotations

from graphwright.server.auth.authority import load_auth

__all__ = ["load_auth"]
