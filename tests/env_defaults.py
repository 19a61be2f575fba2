"""Defaults so a bare `pytest` works after `make services`; `make test` sets the same."""

import os

os.environ.setdefault("DATABASE_URL", "postgres://portal:portal@127.0.0.1:5432/portal")
os.environ.setdefault("CELERY_BROKER_URL", "redis://127.0.0.1:6379/0")
os.environ.setdefault("AWS_ENDPOINT_URL", "http://127.0.0.1:5000")
os.environ.setdefault("SECRET_KEY", "test-only-secret-key")
os.environ.setdefault("EMAIL_URL", "locmem://")
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
# Unit tests run Celery tasks in-process; tests marked `worker` start a real worker on Redis.
os.environ.setdefault("CELERY_TASK_ALWAYS_EAGER", "true")
# Members' accounts made by test runs are named apart from `make run`'s (portal-u<id>).
os.environ.setdefault("PORTAL_LOCAL_ACCOUNT_PREFIXES", "ptest-u,ptest-p")
# Under `-n N` (pytest-xdist) each worker has its own test database (pytest-django names it) and
# its own Redis database for the cache, so one worker's version bumps never meet another's.
_worker = os.environ.get("PYTEST_XDIST_WORKER", "")
_broker = os.environ["CELERY_BROKER_URL"]
if _worker.startswith("gw") and _broker.startswith("redis://"):
    os.environ.setdefault("CACHE_URL", f"{_broker.rsplit('/', 1)[0]}/{10 + int(_worker[2:])}")
