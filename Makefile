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

.PHONY: install services run worker test bench fuzz check clean

install: $(STAMP)

$(STAMP): requirements.txt requirements-dev.txt cli/pyproject.toml scripts/install-hub-proxy.sh
	@command -v python3 >/dev/null || (apt-get update -q && apt-get install -y -q python3)
	@python3 -m venv --help >/dev/null 2>&1 && python3 -c "import ensurepip" 2>/dev/null \
		|| (apt-get update -q && apt-get install -y -q python3-venv python3-dev build-essential)
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -r requirements-dev.txt
	$(PIP) install -q -e ./cli  # `portal`, the command line (docs/cli.md)
	bash scripts/install-hub-proxy.sh  # JupyterHub's proxy from npm, into .hub/ (docs/notebooks.md)
	@touch $(STAMP)

services: install
	bash scripts/services.sh

# The portal on embedded defaults: SQLite, a filesystem Celery transport, console email, the
# local compute backend. A real Celery worker (with beat) and JupyterHub with its proxy (the
# notebooks; it signs users in through the portal) run beside the web server. The hub's token,
# its client at the portal's provider and the provider's key are made once into var/.
run: install
	@mkdir -p var/hub
	DEBUG=true $(PY) manage.py migrate --noinput
	DEBUG=true $(PY) manage.py seed_demo $(if $(PASSWORD),--password $(PASSWORD),--password demo)
	DEBUG=true $(PY) manage.py provider_key
	@echo "Portal on http://127.0.0.1:8000 (users researcher, pi, reviewer, admin; password $(or $(PASSWORD),demo)); notebooks' JupyterHub on http://127.0.0.1:8081"
	@eval "$$(bash scripts/hub-env.sh $(CURDIR)/var/hub)"; export DEBUG=true; \
		$(PY) manage.py hub_client; \
		$(VENV)/bin/jupyterhub -f launcher/notebooks/hub/jupyterhub_config.py > var/hub.log 2>&1 & \
		hub=$$!; \
		$(VENV)/bin/celery -A portal worker -B --pool solo --loglevel INFO \
		--schedule var/celerybeat-schedule > var/worker.log 2>&1 & \
		worker=$$!; trap "kill $$worker $$hub 2>/dev/null; wait $$hub" EXIT INT TERM; \
		$(PY) manage.py runserver --noreload 127.0.0.1:8000

test: install services
	$(TEST_ENV) $(VENV)/bin/pytest $(PYTEST_ARGS)

bench: install services
	$(TEST_ENV) $(PY) bench/run_all.py

# The API fuzzer with a random seed and a longer budget than the suite's (seed 1, 150 s over
# every role), as every role (PI, researcher, reviewer, staff, anonymous) in turn; it prints the
# seed: PORTAL_FUZZ_SEED=<seed> make fuzz repeats a run, PORTAL_FUZZ_ROLES=pi,staff picks roles,
# DB=sqlite runs it on SQLite (the `make run` database) instead of PostgreSQL (docs/api.md).
fuzz: install services
	$(TEST_ENV) $(if $(filter sqlite,$(DB)),DATABASE_URL=sqlite:///$(CURDIR)/var/fuzz.sqlite3) \
		PORTAL_FUZZ_SEED=$${PORTAL_FUZZ_SEED:-random} \
		PORTAL_FUZZ_SECONDS=$${PORTAL_FUZZ_SECONDS:-300} PORTAL_FUZZ_EXAMPLES=$${PORTAL_FUZZ_EXAMPLES:-100} \
		$(VENV)/bin/pytest tests/portal/test_api_contract.py -p no:logging -q -s --timeout 7200

check: install
	DEBUG=true $(PY) manage.py check
	DEBUG=true $(PY) manage.py makemigrations --check --dry-run

clean:
	rm -rf var staticfiles .pytest_cache
