"""Moved to `graphwright.testing.redis_servers`; kept so imports of `tests.redis_servers` work."""

from graphwright.testing.redis_servers import (
    Server,
    cluster_port,
    free_port,
    redis_binary,
    start_cluster,
    start_sentinel,
    start_server,
)

__all__ = [
    "Server",
    "cluster_port",
    "free_port",
    "redis_binary",
    "start_cluster",
    "start_sentinel",
    "start_server",
]
