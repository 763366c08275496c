"""Storage: the savers (and their I/O-free operations), the store, sealing, the Redis server
checks."""
