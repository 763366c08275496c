"""MCP servers as tools of a run: configuration, stdio and HTTP servers, the CLI."""
