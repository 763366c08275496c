"""A project module named like one of graphwright's layers; it must not shadow it."""

MARKER = "the project's own graphs module"
