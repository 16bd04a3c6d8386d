# The commands people and CI share. `make run` and `make test` work on a fresh machine.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
# The tests run against the real services of this machine.
TEST_ENV := DJANGO_DEBUG=True DATABASE_URL=postgres://postgres@127.0.0.1:5432/benchboard \
	CELERY_BROKER_URL=redis://127.0.0.1:6379/15 \
	BENCHBOARD_VAR_DIR=$(CURDIR)/var/test

.PHONY: setup setup-app system services run dev test test-fast lint bench bench-scale faults faults-load demo clean

# Install output goes to var/log/install.log: `make run` ends with the URL and the login.
INSTALL_LOG := var/log/install.log
PIP_QUIET := -q --disable-pip-version-check --no-input
# uv installs the app's packages (pinned in pyproject.toml) several times faster than pip.
UV_VERSION := 0.13.8

# What the web app and its workers need (`make run`). INSTALL=0 uses $(VENV) as it is
# (the fresh-clone test reuses the tests' virtualenv instead of installing one).
INSTALL ?= 1
ifeq ($(INSTALL),0)
APP_STAMP :=
else
APP_STAMP := $(VENV)/.installed-app
endif
$(VENV)/.installed-app: pyproject.toml
	@mkdir -p var/log
	@echo "installing Python packages into $(VENV) (log: $(INSTALL_LOG))"
	@test -x $(PY) || python3 -m venv $(VENV) >>$(INSTALL_LOG) 2>&1
	@{ $(PIP) install $(PIP_QUIET) uv==$(UV_VERSION) && \
	   $(VENV)/bin/uv pip install -q --python $(PY) -e . ; } >>$(INSTALL_LOG) 2>&1 \
	   || { tail -20 $(INSTALL_LOG); exit 1; }
	@touch $@

# Plus the test tools (`make test`, `make lint`).
$(VENV)/.installed: pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install $(PIP_QUIET) -e '.[test]'
	touch $@ $(VENV)/.installed-app

node_modules/.installed: package.json
	@echo "installing npm packages (log: $(INSTALL_LOG))"
	@mkdir -p var/log
	@npm ci --no-audit --no-fund --silent >>$(INSTALL_LOG) 2>&1 || { tail -20 $(INSTALL_LOG); exit 1; }
	@touch $@

static/vendor/plotly.min.js: node_modules/.installed scripts/vendor.sh scripts/plotly-entry.js
	@scripts/vendor.sh

setup: $(VENV)/.installed static/vendor/plotly.min.js

setup-app: $(APP_STAMP) static/vendor/plotly.min.js

system:
	scripts/system-packages.sh

services:
	scripts/services.sh

# One machine, for real: gunicorn, DEBUG off, compressed static files; logs in var/log/.
# The benchmark tools are installed as root; otherwise one line says how.
# DEMO=0: no demo run.
DEMO ?= 1
run: setup-app
	@scripts/system-packages.sh --tools
	@BENCHBOARD_DEMO=$(DEMO) $(PY) scripts/run.py

# Development: Django's runserver with DEBUG on.
dev: setup-app
	@BENCHBOARD_DEV=1 BENCHBOARD_DEMO=$(DEMO) $(PY) scripts/run.py

# Three pytest processes (pytest-xdist) on two cores: most tests wait on real
# workers, tools and browsers rather than on the CPU (three: 15 min with the CPU
# 91 % busy on an idle 2-core machine). Each process has its own test
# database and Celery queue (tests/conftest.py, tests/support/isolation.py).
# TEST_WORKERS=0: one.
TEST_WORKERS ?= 3
test: system services setup
	$(TEST_ENV) $(PY) -m pytest -n $(TEST_WORKERS) --durations=15 $(PYTEST_ARGS)

# The edit-test loop: pure units on SQLite, starting no server, about two minutes on
# two cores. Left out (tests/conftest.py, SERVICE_FIXTURES): tests marked slow and tests
# that start a worker, a server, sshd or a browser; `make test` runs everything.
FAST_TESTS := tests/runners tests/test_architecture.py tests/test_registry_closed.py tests/test_docs.py
test-fast: setup
	env -u DATABASE_URL DJANGO_DEBUG=True BENCHBOARD_TEST_FAST=1 \
		BENCHBOARD_VAR_DIR=$(CURDIR)/var/fast $(PY) -m pytest -n 0 -q $(FAST_TESTS)

lint: setup
	$(VENV)/bin/ruff check benchapp runners tests bench scripts
	$(VENV)/bin/ruff format --check benchapp runners tests bench scripts

bench: system services setup
	$(TEST_ENV) $(PY) bench/run.py

# The generated year alone (scripts/bench_scale.py): YEAR_SCALE=0.1 builds a tenth of it.
# YEAR_CHROMIUM=1: then its pages in Chromium, cold and warm (bench/pages.py --year, ~9 min).
# BENCH_COLD_DATABASE="pg_ctlcluster 15 main restart": cold figures on a restarted database
# server with the OS's page cache dropped (as root; every other client is disconnected).
YEAR_SCALE ?= 1
YEAR_CHROMIUM ?= 0
bench-scale: system services setup
	$(TEST_ENV) $(PY) bench/run.py --only scale-data --year-scale $(YEAR_SCALE) \
		$(if $(filter 1,$(YEAR_CHROMIUM)),--year-chromium)

faults: system services setup
	$(TEST_ENV) $(PY) -m pytest -v tests/faults \
		tests/benchapp/runs/test_orchestration.py tests/benchapp/cloud/test_provisioning.py

# The full load scenario (tests/faults/test_load.py; 5 teams x 2 plans in `make test`):
# LOAD_TEAMS teams x LOAD_PLANS plans, each started LOAD_STARTS times (500 runs of one
# short cell) through the API within LOAD_STORM_SECONDS on four worker hosts, faults from a
# seeded schedule (LOAD_SEED): workers killed, the broker's messages lost, the app
# database's connections cut. Prints its figures (BENCHMARKS.md).
LOAD_TEAMS ?= 50
LOAD_PLANS ?= 5
LOAD_STARTS ?= 2
LOAD_SEED ?= 41
faults-load: system services setup
	$(TEST_ENV) LOAD_TEAMS=$(LOAD_TEAMS) LOAD_PLANS=$(LOAD_PLANS) LOAD_STARTS=$(LOAD_STARTS) \
		LOAD_CELLS=1 LOAD_SERVICE_FAULTS=1 LOAD_SEED=$(LOAD_SEED) \
		$(PY) -m pytest -n 0 -s -q tests/faults/test_load.py

clean:
	rm -rf var/test .pytest_cache
