"""The Python API in one process: `Orchestrator` runs, resumes and locks, threads, memory,
streaming, the public testing kit."""
