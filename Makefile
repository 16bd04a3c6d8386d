# The commands people and CI share. `make run` and `make test` work on a fresh machine.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
# The tests run against the real services of this machine.
TEST_ENV := DATABASE_URL=postgres://postgres@127.0.0.1:5432/benchboard \
	CELERY_BROKER_URL=redis://127.0.0.1:6379/15 \
	BENCHBOARD_VAR_DIR=$(CURDIR)/var/test

.PHONY: setup system services run test lint bench faults demo clean

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e '.[test]'
	touch $@

node_modules/.installed: package.json
	npm ci --no-audit --no-fund --silent
	touch $@

static/vendor/plotly.min.js: node_modules/.installed
	scripts/vendor.sh

setup: $(VENV)/.installed static/vendor/plotly.min.js

system:
	scripts/system-packages.sh

services:
	scripts/services.sh

run: setup
	$(PY) manage.py migrate --noinput -v0
	$(PY) manage.py demo_user
	$(PY) scripts/run.py

test: system services setup
	$(TEST_ENV) $(PY) -m pytest --durations=15 $(PYTEST_ARGS)

lint: setup
	$(VENV)/bin/ruff check benchapp runners tests

bench: system services setup
	$(TEST_ENV) $(PY) bench/run.py

faults: system services setup
	$(TEST_ENV) $(PY) -m pytest -v tests/faults \
		tests/benchapp/test_orchestration.py tests/benchapp/test_provisioning.py

clean:
	rm -rf var/test .pytest_cache
