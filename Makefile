# The inner loop. Every target uses the project's .venv (made by ./scripts/bootstrap).
.PHONY: help test quick lint format docs docs-serve demo settings-doc

VENV := .venv/bin

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

test:  ## everything CI runs: lint, types, docs, the whole suite (about 8 minutes on 2 cores)
	./scripts/test

quick:  ## lint, types, docs and the fast tests (not marked slow)
	./scripts/test --quick

lint:  ## what ./scripts/test checks first: ruff, ruff format, mypy --strict, layers, docs build
	./scripts/bootstrap
	./scripts/lint

format:  ## ruff format and ruff's safe fixes
	./scripts/bootstrap
	$(VENV)/ruff format graphwright graphs nodes tools checkpoints graphwright_errors tests bench scripts
	$(VENV)/ruff check --fix graphwright graphs nodes tools checkpoints graphwright_errors tests bench scripts

settings-doc:  ## regenerate docs/reference/settings.md from the Settings model
	$(VENV)/python scripts/settings_doc.py

docs: settings-doc  ## build the docs site into site/, offline, failing on any warning
	NO_MKDOCS_2_WARNING=1 $(VENV)/mkdocs build --strict

docs-serve:  ## serve the docs with live reload on http://127.0.0.1:8000
	NO_MKDOCS_2_WARNING=1 $(VENV)/mkdocs serve

demo:  ## the README's first command
	./scripts/demo
