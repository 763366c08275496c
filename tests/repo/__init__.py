"""The repository as a newcomer meets it: docs examples, packaging, dependencies, the suite
itself."""
