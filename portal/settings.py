"""Settings, all read from the environment (see docs/configuration.md).

Defaults are the embedded ones `make run` uses: SQLite, a filesystem Celery transport, console
email. Tests and production set DATABASE_URL and CELERY_BROKER_URL to PostgreSQL and Redis.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from .envconf import email_config, env_bool, env_list
from .identity.conf import oidc_settings
from .provider.conf import provider_settings

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("PORTAL_VAR_DIR", BASE_DIR / "var"))

DEBUG = env_bool("DEBUG", False)
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG and os.environ.get("PORTAL_ALLOW_INSECURE_KEY") != "1":
        raise ImproperlyConfigured("SECRET_KEY must be set (or DEBUG=true for local work)")
    SECRET_KEY = "insecure-local-development-key-not-for-production"
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "testserver"])
PORTAL_BASE_URL = os.environ.get("PORTAL_BASE_URL", "http://127.0.0.1:8000").rstrip("/")
CSRF_TRUSTED_ORIGINS = [PORTAL_BASE_URL]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "axes",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "allocations",
    "benchmarks",
    "launcher",
    "launcher.cloud",
    "launcher.notebooks",
    "portal",
    "portal.onboarding",
    "portal.knowledge",
    "portal.tokens",
    "portal.identity",
    "oauth2_provider",
    "portal.provider",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "portal.errors.ApiJsonErrorsMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "portal.errors.SingleQueryValuesMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "portal.security.ContentSecurityPolicyMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into its answer.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "portal.urls"
WSGI_APPLICATION = "portal.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "portal.context_processors.navigation",
            ]
        },
    }
]

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{VAR_DIR / 'portal.sqlite3'}"),
        conn_max_age=int(os.environ.get("DB_CONN_MAX_AGE", "60")),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The embedded default has a web server and a worker writing at once. Deferred SQLite
    # transactions that read and then write fail at once with "database is locked" when two
    # meet; IMMEDIATE ones queue for the write lock (up to `timeout` seconds), and WAL lets
    # readers go on while one writes.
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    # The reports' covering index `job_waits` carries two columns PostgreSQL reads from the index
    # alone; SQLite has no such columns and builds it as a plain index on created_at, which is
    # what the embedded default needs: the warning says only that.
    SILENCED_SYSTEM_CHECKS = ["models.W040"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# django-axes first: it refuses a locked-out login before any password is checked.
AUTHENTICATION_BACKENDS = [
    "portal.security.LoginThrottleBackend",
    "django.contrib.auth.backends.ModelBackend",
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-gb"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
# plotly.js: the official basic partial bundle (scatter, bar, pie), pinned and fetched from npm
# by `make install` (scripts/install-plotly.sh); served locally, never from a CDN.
PLOTLY_BUNDLE_DIR = BASE_DIR / ".vendor" / "plotly"
STATICFILES_DIRS = [BASE_DIR / "static", ("vendor/plotly", PLOTLY_BUNDLE_DIR)]
MEDIA_URL = "/media/"
MEDIA_ROOT = VAR_DIR / "media"
# Served as production does (`make run`, the image; PORTAL_STATIC_MANIFEST=true): from
# `collectstatic`'s STATIC_ROOT only, under content-hashed names cached for a year (immutable),
# each with its .gz (and .br) beside it. Otherwise (the tests, a bare `manage.py`) from the
# finders under their own names, with no collectstatic needed: the manifest storage refuses to
# name a file it has not collected.
STATIC_MANIFEST = env_bool("PORTAL_STATIC_MANIFEST", False)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if STATIC_MANIFEST
        else "whitenoise.storage.CompressedStaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = not STATIC_MANIFEST
STATIC_ROOT.mkdir(parents=True, exist_ok=True)

# Sessions are read from the cache and written through to the database (Django's `cached_db`):
# a Redis flush costs one database read per session, never a login.
SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"
SESSION_COOKIE_HTTPONLY = True

# HTTPS settings follow PORTAL_BASE_URL: served over https, cookies are Secure, plain http is
# redirected and browsers are told to keep to https (HSTS); `make run` on http://127.0.0.1
# keeps working. Each can be set from the environment (docs/security.md).
_HTTPS = PORTAL_BASE_URL.startswith("https://")
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", _HTTPS)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", _HTTPS)
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", _HTTPS)
SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", 31_536_000 if _HTTPS else 0))
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", _HTTPS)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
if env_bool("SECURE_PROXY_SSL_HEADER", False):  # behind a proxy that terminates TLS
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]  # the container's health check speaks plain http
# Security headers: Django's defaults, stated so they are seen, plus a CSP of our own.
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
PORTAL_CSP = {
    "default-src": "'self'",
    "script-src": "'self'",
    # plotly.js (the pinned bundle, scripts/install-plotly.sh) adds two <style> elements of
    # fixed content: allowed by their hashes, not by 'unsafe-inline'
    # (tests/portal/test_browser_csp.py); so is the one <style> of templates/500.html, a page
    # that must not depend on anything else (tests/portal/test_production_serving.py).
    "style-src": "'self' 'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=' "
    "'sha256-ji27qzEtxXZW+7dun6UwjHXJ18e6WAin1VvNtkzIE/o=' "
    "'sha256-zIlMEAdu3unBpGhhoATGjRTJJmPvVaM2DGubi5+nOcc='",
    "img-src": "'self' data:",
    "font-src": "'self' data:",
    "connect-src": "'self'",
    "object-src": "'none'",
    "base-uri": "'self'",
    "form-action": "'self'",
    "frame-ancestors": "'none'",
}

# Login throttling (django-axes): the login page, the admin's and POST /api/v1/auth/token/.
# After AXES_FAILURE_LIMIT failures in a row for one username from one address, that pair is
# refused (429, even with the right password) until the cool-off has passed.
AXES_FAILURE_LIMIT = int(os.environ.get("AXES_FAILURE_LIMIT", "5"))
AXES_COOLOFF_TIME = dt.timedelta(minutes=int(os.environ.get("AXES_COOLOFF_MINUTES", "15")))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "portal.security.lockout_response"
AXES_VERBOSE = False

# Sign-in with the institution's OpenID Connect provider, when OIDC_ISSUER, OIDC_CLIENT_ID and
# OIDC_CLIENT_SECRET are set; PORTAL_LOCAL_LOGIN=false switches passwords off (docs/security.md).
# The loops below set these through globals(); the annotations tell the type checker the names
# the portal's code reads (django-axes fills in AXES_HTTP_RESPONSE_CODE, 429, when it loads).
OIDC_ENABLED: bool
PORTAL_LOCAL_LOGIN: bool
OIDC_ISSUER: str
OIDC_RP_CLIENT_ID: str
OIDC_PROVIDER_NAME: str
OIDC_USERNAME_CLAIM: str
OIDC_GROUPS_CLAIM: str
OIDC_REVIEWER_GROUPS: list[str]
OIDC_STAFF_GROUPS: list[str]
OIDC_TIMEOUT: int
OIDC_DISCOVERY_TTL: int
PORTAL_PROVIDER_KEY_FILE: Path
AXES_HTTP_RESPONSE_CODE: int
for _key, _value in oidc_settings(backends=AUTHENTICATION_BACKENDS, csp=PORTAL_CSP).items():
    globals()[_key] = _value

# The portal as an OpenID Connect provider for JupyterHub's sign-on (/o/, docs/notebooks-hub.md).
for _key, _value in provider_settings(var_dir=VAR_DIR, csp=PORTAL_CSP, https=_HTTPS).items():
    globals()[_key] = _value

for _key, _value in email_config(os.environ.get("EMAIL_URL", "console://")).items():
    globals()[_key] = _value
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "portal@localhost")

# Celery: Redis in tests and production, a filesystem transport for `make run`.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "filesystem://")
if CELERY_BROKER_URL.startswith("filesystem://"):
    _queue_dir = VAR_DIR / "celery"
    for _folder in ("queue", "processed", "control"):
        (_queue_dir / _folder).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_queue_dir / "queue"),
        "data_folder_out": str(_queue_dir / "queue"),
        "processed_folder": str(_queue_dir / "processed"),
        "control_folder": str(_queue_dir / "control"),
        "store_processed": False,
    }
# The cache (sessions, page fragments keyed on versions the services bump, the navigation):
# shared Redis wherever Redis is the broker (every web process sees one cache, so a logout or a
# bumped version holds everywhere), or CACHE_URL; the process's memory for `make run`.
CACHE_URL = os.environ.get(
    "CACHE_URL", CELERY_BROKER_URL if CELERY_BROKER_URL.startswith("redis://") else ""
)
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": CACHE_URL,
        "KEY_PREFIX": "portal",
    }
    if CACHE_URL
    else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
}
# The compute backends' names, for `Facility.backend` and `UsageRecord.source`: the launcher's
# registry owns them (a new backend registers and needs no migration); the allocations app sits
# below the launcher, so it reaches them through these paths (allocations/backend_names.py).
FACILITY_BACKEND_CHOICES = "launcher.backends.registry.backend_choices"
# What lower floors ask of higher ones, named here rather than registered at start-up: whether
# the portal drives a facility itself, and who reserves GPU-hours on the ledger until charged.
PORTAL_CONNECTION_CHECK = "launcher.backends.registry.is_connected"
PORTAL_RESERVATION_PROVIDERS = {
    "job_ids": "launcher.selectors.job_reservations",
    "session_ids": "launcher.notebooks.ledger.session_reservations",
}
USAGE_SOURCE_CHOICES = "launcher.backends.registry.usage_source_choices"
# The calibration page (/benchmarks/) also shows placement's own error, per facility: the
# launcher's rows (docs/placement.md).
PORTAL_PLACEMENT_ERRORS = "launcher.placement_selectors.placement_error_rows"
# The local backend (launcher/local/): job folders, and how many run at once on a facility
# that sets no `slots` and has no node type (docs/architecture.md).
LOCAL_JOBS_DIR = Path(os.environ.get("PORTAL_LOCAL_JOBS_DIR", VAR_DIR / "local-jobs"))
LOCAL_JOB_SLOTS = int(os.environ.get("PORTAL_LOCAL_JOB_SLOTS", "2"))
# The local backend's hard stop (launcher/local/supervisor.py): seconds per minute of wall time
# (tests shrink it to run a "10-minute" job for a few seconds) and the grace between SIGTERM at
# the limit and SIGKILL.
LOCAL_SECONDS_PER_MINUTE = float(os.environ.get("PORTAL_LOCAL_SECONDS_PER_MINUTE", "60"))
LOCAL_KILL_AFTER_SECONDS = float(os.environ.get("PORTAL_LOCAL_KILL_AFTER_SECONDS", "30"))
# How long a submit (or poll) that starts a local cell waits for its supervisor to say it runs,
# so the job shows `running` at once rather than on the next poll (launcher/local/backend.py).
LOCAL_START_WAIT_SECONDS = float(os.environ.get("PORTAL_LOCAL_START_WAIT_SECONDS", "5"))
# Members' work runs under their own unix accounts (launcher/local/identity.py, docs/security.md
# "Users' code runs as the user"): "auto" switches identities when the portal is root, "no"
# never (notebooks are then refused); accounts `<prefix><user id>` and groups `<prefix><project
# id>` are made on first use (unless PORTAL_LOCAL_CREATE_ACCOUNTS=false: a site names them in
# the facility's `accounts`), with homes in LOCAL_HOMES_DIR.
LOCAL_RUN_AS_MEMBERS = os.environ.get("PORTAL_LOCAL_RUN_AS_MEMBERS", "auto")
LOCAL_CREATE_ACCOUNTS = os.environ.get("PORTAL_LOCAL_CREATE_ACCOUNTS", "true").lower() not in (
    "false",
    "no",
    "0",
    "off",
)
LOCAL_HOMES_DIR = Path(os.environ.get("PORTAL_LOCAL_HOMES_DIR", VAR_DIR / "homes"))
LOCAL_ACCOUNT_PREFIXES = tuple(
    os.environ.get("PORTAL_LOCAL_ACCOUNT_PREFIXES", "portal-u,portal-p").split(",", 1)
)
# Notebook sessions (launcher.notebooks, docs/notebooks.md): the JupyterHub the portal drives
# as its service `portal`, the longest session one may ask for, each session's folder on the
# local backend, and how long a stopped session may wait for its backend's record (sacct lags)
# or a start for the hub's answer before it is failed.
JUPYTERHUB_URL = os.environ.get("JUPYTERHUB_URL", "http://127.0.0.1:8081").rstrip("/")
JUPYTERHUB_API_TOKEN = os.environ.get("JUPYTERHUB_API_TOKEN", "")
NOTEBOOK_MAX_HOURS = float(os.environ.get("PORTAL_NOTEBOOK_MAX_HOURS", "12"))
NOTEBOOKS_DIR = Path(os.environ.get("PORTAL_NOTEBOOKS_DIR", VAR_DIR / "notebooks"))
NOTEBOOK_RECORD_GRACE_SECONDS = float(os.environ.get("PORTAL_NOTEBOOK_RECORD_GRACE_SECONDS", "600"))
NOTEBOOK_SPAWN_TIMEOUT_SECONDS = float(
    os.environ.get("PORTAL_NOTEBOOK_SPAWN_TIMEOUT_SECONDS", "900")
)
# A hub still starting (make run's first seconds) is waited for this long before a start fails.
NOTEBOOK_HUB_START_WAIT_SECONDS = int(
    os.environ.get("PORTAL_NOTEBOOK_HUB_START_WAIT_SECONDS", "90")
)
# Submissions that survive outages (launcher/services/submission.py, docs/operations.md): a job's
# submission is owned by one worker at a time (a lease), retried with exponential backoff
# (base, cap), and failed with its last error, staff told by email, once the deadline passed.
SUBMIT_DEADLINE_SECONDS = int(os.environ.get("PORTAL_SUBMIT_DEADLINE_SECONDS", "1800"))
SUBMIT_LEASE_SECONDS = int(os.environ.get("PORTAL_SUBMIT_LEASE_SECONDS", "300"))
SUBMIT_RETRY_BASE_SECONDS = int(os.environ.get("PORTAL_SUBMIT_RETRY_BASE_SECONDS", "10"))
SUBMIT_RETRY_MAX_SECONDS = int(os.environ.get("PORTAL_SUBMIT_RETRY_MAX_SECONDS", "300"))
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
# The queue web processes send tasks to and workers read by default (`celery worker -Q` names
# another): a second portal on the same Redis, or a test run, keeps its own.
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("CELERY_TASK_DEFAULT_QUEUE", "celery")
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_TIMEZONE = "UTC"
CELERY_BEAT_SCHEDULE: dict[str, dict] = {
    "allocations-expire": {"task": "allocations.expire_allocations", "schedule": 300.0},
    # The ledger's columns against the records: drift corrected and audited (docs/ledger.md).
    "allocations-reconcile-ledger": {"task": "allocations.reconcile_ledger", "schedule": 3600.0},
    # The launcher polls Slurm job states and ingests sacct records (docs/launcher.md).
    "launcher-poll-jobs": {"task": "launcher.poll_jobs", "schedule": 10.0},
    "launcher-ingest-usage": {"task": "launcher.ingest_usage", "schedule": 10.0},
    "launcher-roll-job-months": {"task": "launcher.roll_job_months", "schedule": 3600.0},
    # Cloud clusters: interruptions within 15 s, cost as it accrues, idle stop; orphans.
    "cloud-sync": {"task": "cloud.sync_all", "schedule": 5.0},
    "cloud-reconcile": {"task": "cloud.reconcile", "schedule": 60.0},
    # Weekly usage digests (each person's once a week is up) and the failing-jobs digest.
    "allocations-usage-digests": {"task": "allocations.send_usage_digests", "schedule": 3600.0},
    # The projection alert where the 7-day rate moved at midnight (docs/ledger.md).
    "allocations-usage-alerts": {"task": "allocations.check_usage_alerts", "schedule": 3600.0},
    "launcher-failing-jobs-digest": {"task": "launcher.failing_jobs_digest", "schedule": 3600.0},
    # Notebook sessions against the hub's view: states, hours, idle limit, charges.
    "notebooks-sync": {"task": "notebooks.sync", "schedule": 15.0},
    # A worker ran this: the queue is being served (launcher/heartbeat.py); and the
    # idempotency keys of launches past their 24 hours forgotten (launcher/idempotency.py).
    "launcher-heartbeat": {
        "task": "launcher.heartbeat",
        "schedule": float(os.environ.get("PORTAL_WORKER_HEARTBEAT_SECONDS", "15")),
    },
    "launcher-prune-idempotency-keys": {
        "task": "launcher.prune_idempotency_keys",
        "schedule": 3600.0,
    },
}
# A worker not seen for this long is taken to be down; a job queued longer than
# PORTAL_QUEUE_NOTICE_SECONDS while no worker is up says so (job page, API `queue_notice`).
PORTAL_WORKER_STALE_SECONDS = int(os.environ.get("PORTAL_WORKER_STALE_SECONDS", "90"))
PORTAL_QUEUE_NOTICE_SECONDS = int(os.environ.get("PORTAL_QUEUE_NOTICE_SECONDS", "60"))

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # Account and personal API tokens, hashed (portal/tokens, docs/security.md).
        "portal.tokens.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_PAGINATION_CLASS": "portal.apiconf.Pagination",
    "PAGE_SIZE": 50,
    # JSON only: one content type per request body in the schema, others are a 415.
    "DEFAULT_PARSER_CLASSES": ["portal.apiconf.JSONParser"],
    # Every operation documents the errors it can return (portal/schema.py, docs/api.md).
    "DEFAULT_SCHEMA_CLASS": "portal.schema.PortalAutoSchema",
    "EXCEPTION_HANDLER": "core.api.exception_handler",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"]
    + (["rest_framework.renderers.BrowsableAPIRenderer"] if DEBUG else []),
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Research compute allocation portal API",
    "DESCRIPTION": "Projects, allocation requests and review, allocations, recommendations, jobs.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {
        "FacilityKindEnum": "allocations.models.catalogue.Facility.Kind",
        "RequestKindEnum": "allocations.models.request.AllocationRequest.Kind",
        "RequestStatusEnum": "allocations.models.request.AllocationRequest.Status",
        "AllocationStatusEnum": "allocations.models.allocation.Allocation.Status",
        "JobStateEnum": "launcher.models.job.Job.State",
        "SensitivityEnum": "allocations.models.catalogue.Sensitivity",
        "BenchmarkStrategyEnum": "benchmarks.recommender.types.STRATEGIES",
        "JobWorkloadEnum": "launcher.models.job.Job.Workload",
        # POST jobs/ and placements/: a training job, or "sweep".
        "LaunchWorkloadEnum": ["ctxray-train", "sweep"],
        "TrainModelEnum": "launcher.sweepgrid.MODELS",
        "ProjectRoleEnum": "allocations.models.project.ProjectMembership.Role",
        "ClusterStateEnum": "launcher.cloud.models.Cluster.State",
        "NodeStateEnum": "launcher.cloud.models.Node.State",
        "NodeRoleEnum": "launcher.cloud.models.Node.Role",
        "CloudTaskStateEnum": "launcher.cloud.models.CloudTask.State",
    },
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "INFO"}},
}

# Where AWS lives (moto in tests). Used by the cloud backend.
AWS_ENDPOINT_URL = os.environ.get("AWS_ENDPOINT_URL", "")
# This installation's id in every cloud tag and lookup (launcher/cloud/client.py
# installation_id); empty: the id generated once and stored in the database.
PORTAL_INSTALLATION_ID = os.environ.get("PORTAL_INSTALLATION_ID", "")

# Group whose members review allocation requests.
PORTAL_REVIEWERS_GROUP = "reviewers"
# The longest an allocation may last, start to end, whatever a facility's own latest end date
# (a facility without one took "9999-12-31"): refused on `end_date` (docs/configuration.md).
PORTAL_MAX_ALLOCATION_DAYS = int(os.environ.get("PORTAL_MAX_ALLOCATION_DAYS", "1826"))
# Words a full request's justification must have at least ("a real justification").
PORTAL_FULL_JUSTIFICATION_MIN_WORDS = 25
# Projects one user (not staff) may create in 24 hours (docs/security.md, "Policy").
PORTAL_PROJECTS_PER_USER_PER_DAY = int(os.environ.get("PORTAL_PROJECTS_PER_USER_PER_DAY", "3"))
# Days an account token (POST /api/v1/auth/token/, `portal login`) lives (docs/security.md).
PORTAL_ACCOUNT_TOKEN_DAYS = int(os.environ.get("PORTAL_ACCOUNT_TOKEN_DAYS", "30"))
if PORTAL_ACCOUNT_TOKEN_DAYS < 1:
    raise ImproperlyConfigured(
        "PORTAL_ACCOUNT_TOKEN_DAYS must be a whole number of days, at least 1"
    )
# The site's key for GET /api/v1/balances/ood.json, the balance file an Open OnDemand dashboard
# reads (docs/ondemand.md): empty, no key opens it (staff and members use their tokens). A
# secret of at least 32 visible ASCII characters, from the environment, never the repository.
PORTAL_OOD_BALANCE_KEY = os.environ.get("PORTAL_OOD_BALANCE_KEY", "").strip()
if PORTAL_OOD_BALANCE_KEY and (
    len(PORTAL_OOD_BALANCE_KEY) < 32 or not all("!" <= c <= "~" for c in PORTAL_OOD_BALANCE_KEY)
):
    raise ImproperlyConfigured(
        "PORTAL_OOD_BALANCE_KEY must be at least 32 visible ASCII characters, no spaces "
        "(e.g. `openssl rand -hex 32`)"
    )

# The job poll reads the progress and log of at most this many running jobs of a facility per
# cycle, those read least recently first (launcher/services/monitor.py; docs/performance.md).
PORTAL_POLL_FILES_PER_CYCLE = int(os.environ.get("PORTAL_POLL_FILES_PER_CYCLE", "100"))

# The usage report page shows this many groups, those with the most GPU-hours; its CSV downloads
# and the API have every one (portal/reports/tables.py).
PORTAL_REPORT_PAGE_GROUPS = int(os.environ.get("PORTAL_REPORT_PAGE_GROUPS", "50"))
# Each web process keeps the settled months' part of this many reports (a grouping, a scope, a
# span of months), the least recently read dropped first (portal/reports/settled.py). A staff
# year by PI at a centre's scale is about 20 MB.
PORTAL_REPORT_SETTLED_KEPT = int(os.environ.get("PORTAL_REPORT_SETTLED_KEPT", "8"))
