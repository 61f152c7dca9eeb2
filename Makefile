# Memgov — the two commands: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export DJANGO_SETTINGS_MODULE := config.settings

.PHONY: run test lint venv demo clean bench

$(STAMP): pyproject.toml clients/python/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=25.1"
	$(BIN)/python -m pip install --quiet -e . --group dev
	# The Python client is its own package (clients/python); pip cannot name it by a
	# relative path inside pyproject.toml, so it is installed here, editable.
	$(BIN)/python -m pip install --quiet -e ./clients/python
	touch $(STAMP)

venv: $(STAMP)

# Migrate SQLite (or DATABASE_URL), load the demo tenant, start web + worker + beat.
run: $(STAMP)
	$(BIN)/python scripts/run.py

test: $(STAMP)
	@mkdir -p var
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	SECRET_KEY=lint-only-secret $(BIN)/mypy .

bench: $(STAMP)
	$(BIN)/python -m bench.run_all

clean:
	rm -rf var .pytest_cache .mypy_cache .ruff_cache
