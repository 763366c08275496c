"""The HTTP service (see graphwright.server.app)."""
