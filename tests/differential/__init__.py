"""graphwright beside the reference Agent Server (`langgraph dev`), call by call, with the
tables the tests write."""
