"""Issue 47, point 2: the cache and the task queue never share a Redis database.

The restore runbook empties the cache's database; when the Kubernetes Secret (or the
README's ``make prod`` example) set only REDIS_URL, that was the broker's database too, and
the flush dropped queued tasks and beat's last runs. Every shipped configuration now names
two databases, a production process refuses to start on one, and the runbook flushes the
database CACHE_URL names and nothing else."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
import yaml

from config.env import redis_database
from tests.deploy.support import DEPLOY, ROOT

NAMES = ("REDIS_URL", "CACHE_URL", "CELERY_BROKER_URL")
ASSIGNED = re.compile(
    r"(?:--from-literal=|\bexport\s+|^#?\s*|\s)(REDIS_URL|CACHE_URL|CELERY_BROKER_URL)=(\S+)",
    re.MULTILINE,
)
JSON_ASSIGNED = re.compile(r'"(REDIS_URL|CACHE_URL|CELERY_BROKER_URL)":\s*"([^"]+)"')


def _start(**env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MEMGOV_") and k not in NAMES}
    clean.pop("DEBUG", None)
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=ROOT,
        env={**clean, "DJANGO_SETTINGS_MODULE": "config.settings", "SECRET_KEY": "x", **env},
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize(
    "urls",
    [
        {"REDIS_URL": "redis://127.0.0.1:6379/0"},  # the old Secret and make prod example
        {"CACHE_URL": "redis://LOCALHOST:6379", "CELERY_BROKER_URL": "redis://localhost/0"},
        {"REDIS_URL": "redis://127.0.0.1:6379/4", "CACHE_URL": "redis://127.0.0.1:6379?db=4"},
        {
            "CACHE_URL": "redis://localhost:16471/8",
            "CELERY_BROKER_URL": "redis://127.0.0.1:16471/8",
        },
        {"CACHE_URL": "redis://[::1]:6379/2", "CELERY_BROKER_URL": "redis://127.0.0.1:6379/2"},
    ],
    ids=["redis-url-only", "db-0-written-two-ways", "db-in-query", "localhost-is-127", "ipv6"],
)
def test_production_refuses_to_start_when_one_redis_database_holds_cache_and_queue(urls):
    started = _start(EMAIL_URL="dummy://", **urls)

    assert started.returncode == 3  # gunicorn's "worker failed to boot": no respawning
    # One line for the operator, no traceback.
    assert started.stderr.strip().splitlines() == [
        "refusing to start: CACHE_URL and CELERY_BROKER_URL (each defaults to REDIS_URL) name "
        "the same Redis database: give the cache its own, e.g. REDIS_URL=redis://host:6379/0 "
        "and CACHE_URL=redis://host:6379/1, so emptying the cache keeps the queued tasks"
    ]


def test_production_starts_with_two_databases_and_debug_may_share_one():
    apart = _start(
        EMAIL_URL="dummy://",
        REDIS_URL="redis://127.0.0.1:6379/0",
        CACHE_URL="redis://127.0.0.1:6379/1",
    )
    shared_in_debug = _start(DEBUG="true", REDIS_URL="redis://127.0.0.1:6379/0")

    assert apart.returncode == 0, apart.stderr
    assert shared_in_debug.returncode == 0, shared_in_debug.stderr


def _effective(assigned: dict[str, str]) -> tuple[str, str]:
    """The cache's and the broker's URL as config/settings.py derives them."""
    redis_url = assigned.get("REDIS_URL", "")
    return (
        assigned.get("CACHE_URL", redis_url),
        assigned.get("CELERY_BROKER_URL", redis_url),
    )


def _text_configurations() -> dict[str, dict[str, str]]:
    """Each shipped text that sets the Redis URLs: the env example, the overlay's Secret
    command, and each code block of README and docs/operations.md that sets any."""
    texts = {
        "deploy/memgov.env.example": (DEPLOY / "memgov.env.example").read_text(),
        "overlay secret": (DEPLOY / "k8s/overlays/example/kustomization.yaml").read_text(),
    }
    for doc in ("README.md", "docs/operations.md"):
        blocks = (ROOT / doc).read_text(encoding="utf-8").split("```")[1::2]
        texts.update({f"{doc} block {i}": block for i, block in enumerate(blocks)})
    found = {}
    for where, text in texts.items():
        text = text.replace("\\\n", " ")
        assigned = dict(ASSIGNED.findall(text) + JSON_ASSIGNED.findall(text))
        if assigned:
            found[where] = assigned
    return found


def test_every_shipped_configuration_gives_cache_and_queue_their_own_databases():
    configurations = _text_configurations()
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))
    for name, service in compose["services"].items():
        environment = service.get("environment") or {}
        if isinstance(environment, list):
            environment = dict(item.split("=", 1) for item in environment)
        assigned = {k: str(v) for k, v in environment.items() if k in NAMES}
        if assigned:
            configurations[f"compose {name}"] = assigned

    # The ones that once shared a database are all here.
    assert {"overlay secret", "deploy/memgov.env.example", "compose web"} <= set(configurations)
    assert sum(where.startswith("README.md") for where in configurations) >= 3  # mcp, prod, k8s
    for where, assigned in configurations.items():
        cache, broker = _effective(assigned)
        assert cache and broker, (where, assigned)
        assert redis_database(cache) != redis_database(broker), (where, assigned)


def test_the_restore_runbook_flushes_the_cache_database_only():
    runbook = (ROOT / "docs/operations.md").read_text(encoding="utf-8")
    restore = runbook.split("## Backup and point-in-time restore", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"`(redis-cli [^`]*)`", restore)

    assert commands == ['redis-cli -u "$CACHE_URL" FLUSHDB'], commands
