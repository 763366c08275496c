"""One run of the HTTP service.

Its input and config, its execution and event frames, and what happens when it ends.
"""
