"""`python -m graphwright`: the CLI, for where the `graphwright` script is not on PATH."""

from graphwright.cli import app

app()
