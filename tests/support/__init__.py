"""Everything in the suite that is not a test: rigs, graphs served by name, fixture projects and
pages."""
