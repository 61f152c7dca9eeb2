"""Every setting the application reads from the environment is somewhere an operator
looks (issue 36, point 13): in deploy/memgov.env.example, the compose deployment's
template (development- and test-only ones under their own heading), and each one that
bears on security in README's Deploy section."""

from __future__ import annotations

import ast
import re

from tests.deploy.support import DEPLOY, ROOT, env_example_names

READERS = {"env_str", "env_bool", "env_int", "env_list"}

# Each setting config/settings.py reads is one or the other: a new setting fails
# test_every_setting_is_classified until someone decides, and a security one must then
# be in the README.
SECURITY = {
    *("SECRET_KEY", "SECRET_KEY_FALLBACKS", "DEBUG", "ALLOWED_HOSTS", "SITE_URL"),
    *("CSRF_TRUSTED_ORIGINS", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE"),
    *("SECURE_HSTS_SECONDS", "SECURE_HSTS_INCLUDE_SUBDOMAINS"),
    *("MEMGOV_TRUST_X_FORWARDED_PROTO", "MEMGOV_TRUSTED_PROXIES", "MEMGOV_CLIENT_IP_HEADER"),
    *("MEMGOV_LOGIN_FAILURE_LIMIT", "MEMGOV_LOGIN_USERNAME_FAILURE_LIMIT"),
    *("MEMGOV_LOGIN_FAILURE_WINDOW_SECONDS", "MEMGOV_THROTTLE_RATE"),
    *("MEMGOV_TENANT_MAX_IN_FLIGHT", "MEMGOV_METRICS_TOKEN", "MEMGOV_WORKER_METRICS_HOST"),
    "MEMGOV_WEBHOOK_TENANT_MAX_IN_FLIGHT",
    *("MEMGOV_WEBHOOK_ALLOW_PRIVATE", "EMAIL_URL", "MEMGOV_AUDIT_KEYS"),
}
OPERATIONAL = {
    *("DATABASE_URL", "REDIS_URL", "CACHE_URL", "CELERY_BROKER_URL", "MEMGOV_VAR_DIR"),
    *("DEFAULT_FROM_EMAIL", "EMAIL_BACKEND", "EMAIL_HOST", "EMAIL_PORT", "EMAIL_HOST_USER"),
    *("EMAIL_HOST_PASSWORD", "EMAIL_USE_TLS", "LOG_LEVEL", "MEMGOV_LOG_FORMAT"),
    *("MEMGOV_BEAT_LEASE_SECONDS", "MEMGOV_DB_CONNECT_TIMEOUT", "MEMGOV_DB_POOL_MODE"),
    *("MEMGOV_DB_PREPARED_STATEMENTS", "MEMGOV_ERASURE_BATCH", "MEMGOV_MIGRATE_LOCK_TIMEOUT"),
    *("MEMGOV_IDEMPOTENCY_LEASE_SECONDS", "MEMGOV_READY_TIMEOUT_SECONDS"),
    *("MEMGOV_RESOLVE_CACHE", "MEMGOV_STATIC_ROOT", "MEMGOV_WEB_THREADS"),
    *("MEMGOV_WEBHOOK_DEADLINE_SECONDS", "MEMGOV_WEBHOOK_RETRY_BASE_SECONDS"),
    *("MEMGOV_WEBHOOK_RETRY_WINDOW_SECONDS", "MEMGOV_WORKER_METRICS_PORT"),
    *("MEMGOV_RETENTION_AT", "MEMGOV_REMINDERS_AT", "MEMGOV_SCHEDULE_TIME_ZONE"),
    *("MEMGOV_WEBHOOK_HELD_RETENTION_SECONDS", "MEMGOV_DB_STATEMENT_TIMEOUT"),
    *("MEMGOV_REDIS_COOLDOWN_SECONDS", "MEMGOV_CACHE_SOCKET_TIMEOUT_SECONDS"),
    "MEMGOV_WORKER_REMOTE_CONTROL",
    "MEMGOV_DB_HEALTH_CHECKS",
    *("MEMGOV_SEMANTIC", "MEMGOV_EMBEDDING_MODEL", "MEMGOV_EMBEDDING_THREADS"),
}
DEVELOPMENT_ONLY_HEADING = "# Development and tests only"


def settings_read() -> set[str]:
    """The variables config/settings.py reads (``env_*("NAME", …)``), from its source."""
    tree = ast.parse((ROOT / "config" / "settings.py").read_text(encoding="utf-8"))
    return {
        node.args[0].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in READERS
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    }


# What a process sets for itself, not an operator (gunicorn.conf.py's metrics directory).
INTERNAL = {"MEMGOV_OWN_METRICS_DIR"}


def memgov_variables_read_elsewhere() -> set[str]:
    """The ``MEMGOV_*`` variables read outside config/settings.py: by gunicorn's config and
    config/ through ``os.environ``, and by deploy/Procfile's command lines (``${NAME:-…}``).
    ``MEMGOV_PROBE_PORT`` was one, missing from the env template (issue 47)."""
    found: set[str] = set()
    for path in [ROOT / "deploy" / "gunicorn.conf.py", *sorted((ROOT / "config").glob("*.py"))]:
        text = path.read_text(encoding="utf-8")
        found |= set(
            re.findall(r'os\.(?:environ(?:\.get|\.setdefault)?[\[(]|getenv\()"(MEMGOV_\w+)"', text)
        )
    procfile = (DEPLOY / "Procfile").read_text(encoding="utf-8")
    found |= set(re.findall(r"\$\{(MEMGOV_\w+):-", procfile))
    return found - INTERNAL


def _deploy_section() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Deploy\n", 1)[1]
    return section.split("\n## ", 1)[0]


def test_every_setting_is_classified():
    read = settings_read()

    assert len(read) > 40  # the reader found them
    assert read == SECURITY | OPERATIONAL
    assert not SECURITY & OPERATIONAL


def test_the_compose_template_names_every_setting_the_application_reads():
    text = (DEPLOY / "memgov.env.example").read_text(encoding="utf-8")
    named = env_example_names("memgov.env.example")
    development = text.split(DEVELOPMENT_ONLY_HEADING, 1)[1]

    assert settings_read() - named == set()
    assert memgov_variables_read_elsewhere() - named == set()
    # Named, but under the heading that says never in production.
    assert "DEBUG=" in development and "MEMGOV_WEBHOOK_ALLOW_PRIVATE=" in development
    assert "# DEBUG=false" in text and "\nDEBUG=" not in text


def test_the_readme_deploy_section_names_every_security_setting():
    deploy = _deploy_section()

    missing = {name for name in SECURITY if f"`{name}" not in deploy}
    assert missing == set()


def test_the_readme_names_every_memgov_setting():
    """Each ``MEMGOV_*`` variable is in README, where an operator looks one up:
    ``MEMGOV_DB_STATEMENT_TIMEOUT`` was only in docs/operations.md (issue 47)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    read = settings_read() | memgov_variables_read_elsewhere()

    missing = {name for name in read if name.startswith("MEMGOV_") and f"`{name}`" not in readme}
    assert missing == set()
