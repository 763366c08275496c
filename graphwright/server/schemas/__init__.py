"""Request and response bodies of the HTTP service.

Shaped like the LangGraph API that `langgraph-sdk` speaks.
"""
