# The inner loop. Every target uses the project's .venv (made by ./scripts/bootstrap).
.PHONY: help test quick lint format docs docs-serve demo settings-doc lock lock-upgrade

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

# Exact versions and hashes for every Python the project supports (--universal), and no index
# URL: the lock installs from whichever registry pip and uv are configured with. An existing
# pin is kept unless pyproject.toml excludes it; lock-upgrade moves every pin to the newest.
LOCK := UV_SYSTEM_CERTS=1 $(VENV)/uv pip compile --quiet --universal --generate-hashes \
	--annotation-style line --extra dev --custom-compile-command 'make lock' \
	pyproject.toml -o requirements-dev.lock

lock:  ## refresh requirements-dev.lock from pyproject.toml, keeping the pins it can
	./scripts/bootstrap
	$(LOCK)

lock-upgrade:  ## requirements-dev.lock at the newest versions pyproject.toml allows
	./scripts/bootstrap
	$(LOCK) --upgrade

settings-doc:  ## regenerate docs/reference/settings.md from the Settings model
	$(VENV)/python scripts/settings_doc.py

docs: settings-doc  ## build the docs site into site/, offline, failing on any warning
	NO_MKDOCS_2_WARNING=1 $(VENV)/mkdocs build --strict

docs-serve:  ## serve the docs with live reload on http://127.0.0.1:8000
	NO_MKDOCS_2_WARNING=1 $(VENV)/mkdocs serve

demo:  ## the README's first command
	./scripts/demo
