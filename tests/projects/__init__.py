"""`langgraph.json` projects as LangGraph users write them: config, keys, serving."""
