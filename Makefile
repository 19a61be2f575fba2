# The commands of the README. Each works on a fresh Debian 12 machine as root.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed

# The real components `make services` starts (tests and benchmarks use them).
TEST_ENV := DATABASE_URL=postgres://portal:portal@127.0.0.1:5432/portal \
	CELERY_BROKER_URL=redis://127.0.0.1:6379/0 \
	AWS_ENDPOINT_URL=http://127.0.0.1:5000 \
	SECRET_KEY=test-only-secret-key EMAIL_URL=locmem:// DEBUG=false \
	DJANGO_ALLOW_ASYNC_UNSAFE=true

# The unit tier: every test that needs no service, on SQLite with Celery eager, no root and no
# network (the markers its fixtures give a test: tests/conftest.py NEEDS). Its folders live in
# UNIT_VAR (var/unit; any folder the user can write, for a checkout they cannot), its database
# in memory.
UNIT_VAR ?= $(CURDIR)/var/unit
UNIT_ENV := DATABASE_URL=sqlite:///$(UNIT_VAR)/portal.sqlite3 CELERY_BROKER_URL=memory:// \
	CELERY_TASK_ALWAYS_EAGER=true CACHE_URL= AWS_ENDPOINT_URL=http://127.0.0.1:9 \
	SECRET_KEY=unit-only-secret-key EMAIL_URL=locmem:// DEBUG=false \
	DJANGO_ALLOW_ASYNC_UNSAFE=true PORTAL_VAR_DIR=$(UNIT_VAR)
SERVICE_MARKS := browser or slurm or aws or worker or hub or oidc or postgres or members or root

.PHONY: install services run worker unit test bench bench-scale bench-throughput fuzz check lint types imports clean

install: $(STAMP)

$(STAMP): requirements.txt requirements-dev.txt cli/pyproject.toml scripts/install-hub-proxy.sh \
		scripts/install-plotly.sh
	@command -v python3 >/dev/null || (apt-get update -q && apt-get install -y -q python3)
	@python3 -m venv --help >/dev/null 2>&1 && python3 -c "import ensurepip" 2>/dev/null \
		|| (apt-get update -q && apt-get install -y -q python3-venv python3-dev build-essential)
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -r requirements-dev.txt
	$(PIP) install -q -e ./cli  # `portal`, the command line (docs/cli.md)
	bash scripts/install-hub-proxy.sh  # JupyterHub's proxy from npm, into .hub/ (docs/notebooks.md)
	bash scripts/install-plotly.sh  # the pages' plotly.js bundle from npm, into .vendor/
	@touch $(STAMP)

services: install
	bash scripts/services.sh

# The portal on embedded defaults: SQLite, a filesystem Celery transport, console email, the
# local compute backend. A real Celery worker (with beat) and JupyterHub with its proxy (the
# notebooks; it signs users in through the portal) run beside the web server. The hub's token,
# its client at the portal's provider and the provider's key are made once into var/. Everything
# the portal writes there is private (umask 077; var/ itself 0711): members' processes run under
# their own uids (docs/security.md) and reach only the folders made for them.
# Served as production serves (docs/operations.md, "Static files and error pages"): DEBUG off
# (the portal's own 404 and 500 pages), a secret key made once into var/secret-key (unless
# SECRET_KEY is set), static files collected into staticfiles/ and served by WhiteNoise under
# hashed names, compressed and cached for a year.
RUN_ENV = DEBUG=false PORTAL_STATIC_MANIFEST=true SECRET_KEY="$${SECRET_KEY:-$$(cat var/secret-key)}"
run: install
	@bash scripts/member-reach.sh $(PY) $(CURDIR)  # members' processes run as themselves
	@mkdir -p var/hub && chmod 711 var && chmod 700 var/hub
	@test -s var/secret-key || (umask 077 && $(PY) -c "import secrets; print(secrets.token_urlsafe(50))" > var/secret-key)
	$(RUN_ENV) $(PY) manage.py collectstatic --noinput -v 0
	umask 077 && $(RUN_ENV) $(PY) manage.py migrate --noinput && chmod 600 var/portal.sqlite3
	$(RUN_ENV) $(PY) manage.py seed_demo $(if $(PASSWORD),--password $(PASSWORD),--password demo)
	$(RUN_ENV) $(PY) manage.py provider_key
	@echo "Portal on http://127.0.0.1:8000 (users researcher, pi, reviewer, admin; password $(or $(PASSWORD),demo)); notebooks' JupyterHub on http://127.0.0.1:8081"
	@umask 077; eval "$$(bash scripts/hub-env.sh $(CURDIR)/var/hub)"; export $(RUN_ENV); \
		$(PY) manage.py hub_client; \
		$(VENV)/bin/jupyterhub -f launcher/notebooks/hub/jupyterhub_config.py > var/hub.log 2>&1 & \
		hub=$$!; \
		$(VENV)/bin/celery -A portal worker -B --pool solo --loglevel INFO \
		--schedule var/celerybeat-schedule > var/worker.log 2>&1 & \
		worker=$$!; trap "kill $$worker $$hub 2>/dev/null; wait $$hub" EXIT INT TERM; \
		$(PY) manage.py runserver --noreload 127.0.0.1:8000

# The loops, fastest first (README "Developing"): `make check` (lint, format, types, import
# contracts, Django's checks; no database), `make unit` (no service), `make test` (check, then
# the whole suite on the real components, as CI runs it).
# JOBS: pytest-xdist workers for the tests that need no service (each its own database and
# cache); the service tests run one at a time (they share the cluster, the hub, the worker).
# Exit status 5 is "nothing selected", for PYTEST_ARGS that pick only one kind.
JOBS ?= 2
unit: install
	@mkdir -p $(UNIT_VAR)
	$(UNIT_ENV) $(VENV)/bin/pytest -n $(JOBS) -m "not ($(SERVICE_MARKS))" $(PYTEST_ARGS) \
		|| [ $$? -eq 5 ]

# The unit tier once, as `make unit` runs it but where no service answers (as root: a network
# namespace, scripts/no-network.sh), then the service tier on the real components.
test: check services
	@bash scripts/member-reach.sh $(PY) $(CURDIR)
	bash scripts/no-network.sh $(MAKE) --no-print-directory unit
	$(TEST_ENV) $(VENV)/bin/pytest -m "$(SERVICE_MARKS)" $(PYTEST_ARGS) || [ $$? -eq 5 ]

bench: install services
	$(TEST_ENV) $(PY) bench/run_all.py

# A national centre's scale (docs/performance.md): builds the centre world once into the
# database portal_scale (about 7 minutes; BENCH_SCALE_REBUILD=1 builds it again) and prints
# every page's and list's cost at demo and centre scale side by side. Also part of `make bench`.
bench-scale: install services
	$(TEST_ENV) $(PY) bench/bench_scale.py

# Throughput (docs/performance.md): launches per second through gunicorn and Celery with W = 1,
# 2, 4 workers on the Slurm cluster (its partition DOWN meanwhile, every job cancelled, put back
# as it was), and sacct records ingested per second with 1, 2, 4 processes. Its own database
# and Redis DB; needs root; 6-7 minutes. Also part of `make bench`.
bench-throughput: install services
	$(TEST_ENV) $(PY) bench/bench_throughput.py

# The API fuzzer with a random seed, every phase (coverage and stateful too) and a time budget,
# beyond the suite's (seed 1, examples and fuzzing, 15 cases an operation), as every role (PI,
# researcher, reviewer, staff, anonymous) in turn; it prints the seed:
# PORTAL_FUZZ_SEED=<seed> make fuzz repeats a run, PORTAL_FUZZ_ROLES=pi,staff picks roles,
# DB=sqlite runs it on SQLite (the `make run` database) instead of PostgreSQL (docs/api.md).
fuzz: install services
	$(TEST_ENV) $(if $(filter sqlite,$(DB)),DATABASE_URL=sqlite:///$(CURDIR)/var/fuzz.sqlite3) \
		PORTAL_FUZZ_SEED=$${PORTAL_FUZZ_SEED:-random} \
		PORTAL_FUZZ_SECONDS=$${PORTAL_FUZZ_SECONDS:-900} PORTAL_FUZZ_EXAMPLES=$${PORTAL_FUZZ_EXAMPLES:-100} \
		PORTAL_FUZZ_PHASES=$${PORTAL_FUZZ_PHASES:-examples,coverage,fuzzing,stateful} \
		$(VENV)/bin/pytest tests/portal/test_api_contract.py -p no:logging -q -s --timeout 7200

check: lint types imports
	DEBUG=true $(PY) manage.py check
	DEBUG=true $(PY) manage.py makemigrations --check --dry-run

lint: install  # ruff.toml: the rule set, and the formatter's layout
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

types: install  # mypy.ini: every app, the workloads, the harness and the CLI
	DEBUG=true DJANGO_SETTINGS_MODULE=portal.settings $(VENV)/bin/mypy

imports: install  # .importlinter: the floors, the standalone packages, the seam
	$(VENV)/bin/lint-imports --no-cache

clean:
	rm -rf var staticfiles .pytest_cache
