from graphwright.cli import app

app()
