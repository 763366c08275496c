"""The HTTP service: the LangGraph Agent Server's API on Redis.

`app.py` builds the app (`create_app`); each folder is one kind of thing (see
docs/architecture.md, "The server's folders"): `http` (routers and what a request goes
through), `runs` (one run), `background` (worker, sweeper, crons), `records` (what is kept
in Redis), `auth`, `review`, `extras` (MCP, A2A, metrics) and `schemas` (bodies). A
module whose name starts with `_` is used only inside its folder.
"""
