"""One router per resource of the LangGraph API; `graphwright.server.app` includes them all."""
