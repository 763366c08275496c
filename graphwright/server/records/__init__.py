"""What the service keeps in Redis.

Runs (their scripts and event streams), assistants, crons, threads and their state.
"""
