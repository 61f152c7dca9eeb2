"""Webhook deliveries have their own queue, and every deployment runs a worker for it
apart from the workflow's (issue 33, point 9): a slow receiver holds only the deliveries'
worker. Each way of deploying must consume every queue, or its tasks would wait forever."""

from __future__ import annotations

import shlex
from typing import Any

import pytest
from django.conf import settings
from redis import Redis

from config.celery import app as celery_app
from operations.queues import DEFAULT_QUEUE, QUEUES, WEBHOOK_QUEUE
from tests.conftest import needs
from tests.deploy.kustomize_lite import build
from tests.deploy.support import DEPLOY, consumed_queues, is_celery_worker, load_yaml, procfile


def _procfile() -> list[list[str]]:
    return list(procfile().values())


def _compose() -> list[list[str]]:
    services = load_yaml(DEPLOY / "compose.yaml")["services"]
    return [list(s["command"]) for s in services.values() if "command" in s]


def _kubernetes() -> list[list[str]]:
    rendered = build(DEPLOY / "k8s" / "overlays" / "example")
    return [
        list(container["command"])
        for r in rendered
        if r["kind"] == "Deployment"
        for container in r["spec"]["template"]["spec"]["containers"]
    ]


DEPLOYMENTS = {"Procfile": _procfile, "compose": _compose, "kubernetes": _kubernetes}


def _workers(deployment: str) -> list[set[str]]:
    """The queues each Celery worker of a deployment consumes (no -Q: all of them)."""
    return [
        consumed_queues(argv) or set(QUEUES)
        for argv in DEPLOYMENTS[deployment]()
        if is_celery_worker(argv)
    ]


@pytest.mark.parametrize("deployment", DEPLOYMENTS)
def test_every_queue_has_a_worker_and_deliveries_have_their_own(deployment: str):
    workers = _workers(deployment)

    assert set().union(*workers) == set(QUEUES), shlex.join(map(str, workers))
    assert {frozenset(queues) for queues in workers} == {
        frozenset({DEFAULT_QUEUE}),
        frozenset({WEBHOOK_QUEUE}),
    }


@pytest.mark.parametrize(
    ("task", "queue"),
    [
        ("webhooks.tasks.deliver", WEBHOOK_QUEUE),
        ("webhooks.tasks.fan_out_event", WEBHOOK_QUEUE),
        ("webhooks.tasks.deliver_due", WEBHOOK_QUEUE),
        ("webhooks.tasks.request_tenant_turns", WEBHOOK_QUEUE),
        ("webhooks.tasks.notify_webhook_disabled", WEBHOOK_QUEUE),
        ("approvals.tasks.run_gate_checks", DEFAULT_QUEUE),
    ],
)
def test_webhook_tasks_go_to_their_queue_and_the_workflow_to_the_default(task: str, queue: str):
    assert task in celery_app.tasks
    route: dict[str, Any] = celery_app.amqp.router.route({}, task)
    assert route["queue"].name == queue


def test_a_worker_started_without_a_queue_list_consumes_every_queue():
    """``make run``'s habits, tests and an operator's older command line keep working."""
    assert {queue.name for queue in celery_app.amqp.queues.consume_from.values()} >= set(QUEUES)


@needs("redis")
@pytest.mark.parametrize(
    ("task", "queue"),
    [("webhooks.tasks.deliver", WEBHOOK_QUEUE), ("approvals.tasks.run_gate_checks", DEFAULT_QUEUE)],
)
def test_a_task_sent_to_the_broker_lands_in_its_own_queue_only(task: str, queue: str):
    """With every queue declared as the workers declare them, a task reaches its own queue
    and no other: the workflow's worker never takes a delivery."""
    broker = Redis.from_url(str(settings.CELERY_BROKER_URL))
    broker.delete(*QUEUES)
    with celery_app.connection_for_write() as connection:  # as a worker of each queue does
        for declared in celery_app.amqp.queues.values():
            declared(connection.default_channel).declare()
    try:
        celery_app.send_task(task, args=["never-run"])

        assert {name: broker.llen(name) for name in QUEUES} == {
            name: int(name == queue) for name in QUEUES
        }
    finally:
        broker.delete(*QUEUES)
        broker.close()
