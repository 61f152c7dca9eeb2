"""Issue 47, point 4: the PostgreSQL connection budget, computed from the rendered
manifests. At full scale during a release (the autoscaler's maximum plus each
Deployment's surge pods) with a backup and operators connected, it must fit PostgreSQL's
default limit with room to spare, and the connection alert must stay silent there and
fire only once that room is gone. Before, the budget left out the workers' surge pods
(103 of 97 usable) and the 80 % alert fired for good at full scale."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.kustomize_lite import build
from tests.deploy.support import DEPLOY, run_promtool_tests
from tests.deploy.test_kubernetes import OVERLAY, by_kind

RULES = DEPLOY / "prometheus" / "memgov-rules.yaml"
POSTGRES_DEFAULT_MAX_CONNECTIONS = 100
SUPERUSER_RESERVED = 3  # superuser_reserved_connections: not for applications
USABLE = POSTGRES_DEFAULT_MAX_CONNECTIONS - SUPERUSER_RESERVED
# Outside the manifests, yet on the same server: a pg_dump (one connection) or a base
# backup's session beside it, and operators' psql / manage.py shells.
BACKUPS = 2
OPERATORS = 3
WEB_THREADS_DEFAULT = 8  # deploy/gunicorn.conf.py, when the ConfigMap sets none


def _surge_pods(deployment: dict[str, Any], replicas: int) -> int:
    """Extra pods a rolling update may run: maxSurge, Kubernetes' default 25 % rounded up;
    none for Recreate, which stops the old pods first."""
    strategy = deployment["spec"].get("strategy", {})
    if strategy.get("type") == "Recreate":
        return 0
    surge = strategy.get("rollingUpdate", {}).get("maxSurge", "25%")
    if isinstance(surge, str) and surge.endswith("%"):
        return math.ceil(replicas * int(surge[:-1]) / 100)
    return int(surge)


def _concurrency(command: list[str]) -> int:
    return int(command[command.index("--concurrency") + 1])


def connection_budget(rendered: list[dict[str, Any]]) -> dict[str, int]:
    """Most PostgreSQL connections each role can hold at once during a release: every
    web thread of the autoscaler's largest count plus the surge pods (and each gunicorn
    worker's readiness check, operations/health.py), every Celery pool process and its parent
    in every pod and surge pod, beat and the migration Job, and what runs beside them."""
    deployments = by_kind(rendered, "Deployment")
    config = next(iter(by_kind(rendered, "ConfigMap").values()))["data"]
    [hpa] = by_kind(rendered, "HorizontalPodAutoscaler").values()
    assert hpa["spec"]["scaleTargetRef"]["name"] == "memgov-web"
    web_pods = hpa["spec"]["maxReplicas"]
    threads = int(config.get("MEMGOV_WEB_THREADS", WEB_THREADS_DEFAULT))
    budget = {
        "web": (web_pods + _surge_pods(deployments["memgov-web"], web_pods))
        * int(config["GUNICORN_WORKERS"])
        * (threads + 1)
    }
    for name in ("memgov-worker", "memgov-webhooks"):
        deployment = deployments[name]
        [container] = deployment["spec"]["template"]["spec"]["containers"]
        replicas = deployment["spec"]["replicas"]
        pods = replicas + _surge_pods(deployment, replicas)
        budget[name] = pods * (_concurrency(container["command"]) + 1)
    budget["memgov-beat"] = deployments["memgov-beat"]["spec"]["replicas"]
    budget["migrate"] = 1
    budget["backups"] = BACKUPS
    budget["operators"] = OPERATORS
    return budget


@pytest.fixture(scope="module")
def rendered() -> list[dict[str, Any]]:
    return build(OVERLAY)


def test_the_budget_at_full_scale_during_a_release_leaves_room_beside_backups_and_operators(
    rendered,
):
    budget = connection_budget(rendered)

    assert sum(budget.values()) == 84, budget
    assert sum(budget.values()) <= USABLE - 10, budget  # spare beyond the plan


def test_a_worker_release_adds_no_surge_pod_and_the_web_one_adds_one(rendered):
    deployments = by_kind(rendered, "Deployment")

    assert _surge_pods(deployments["memgov-web"], 3) == 1
    assert _surge_pods(deployments["memgov-worker"], 3) == 0
    assert _surge_pods(deployments["memgov-webhooks"], 2) == 0
    assert _surge_pods({"spec": {}}, 3) == 1  # Kubernetes' default, which the old files had


def _alert_test(series: str, fires: bool) -> dict[str, Any]:
    alert = "MemgovDatabaseConnectionsNearLimit"
    expected = (
        [{"exp_labels": {"severity": "warning"}, "exp_annotations": _annotations(alert)}]
        if fires
        else []
    )
    return {
        "interval": "1m",
        "input_series": [
            {"series": "memgov_db_connections", "values": series},
            {"series": "memgov_db_max_connections", "values": f"{100}x15"},
        ],
        "alert_rule_test": [{"eval_time": "10m", "alertname": alert, "exp_alerts": expected}],
    }


def _annotations(alert: str) -> dict[str, str]:
    rules = yaml.safe_load(RULES.read_text(encoding="utf-8"))["groups"][0]["rules"]
    annotations: dict[str, str] = next(r for r in rules if r.get("alert") == alert)["annotations"]
    return annotations


def test_the_connection_alert_is_silent_at_the_planned_maximum_and_fires_past_it(
    rendered, tmp_path: Path
):
    planned = sum(connection_budget(rendered).values())
    tests = {
        "rule_files": [str(RULES)],
        "evaluation_interval": "1m",
        "tests": [
            _alert_test(f"{planned}x15", fires=False),
            # Four left to all but superusers: a backup and an operator no longer fit.
            _alert_test(f"{USABLE - 4}x15", fires=True),
            _alert_test(f"{USABLE - 5}x15", fires=False),
        ],
    }

    run_promtool_tests(tmp_path, tests)
