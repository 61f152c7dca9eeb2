"""Issue 36 in the rendered Kubernetes manifests: who may open which connection (the
NetworkPolicies, evaluated as Kubernetes does: a pod selected by any egress policy may
reach what one of them allows), and a beat whose schedule does not live in /tmp."""

from __future__ import annotations

import ipaddress
import os
import subprocess
import sys
from typing import Any

import pytest

from config.celery import app as celery_app
from operations.queues import WEBHOOK_QUEUE
from tests.deploy.kustomize_lite import build
from tests.deploy.support import DEPLOY, ROOT, dockerignored, load_yaml
from tests.deploy.test_kubernetes import OVERLAY, by_kind, pod_specs

RECEIVER = "93.184.215.14"  # a public webhook receiver
SMTP = 587


@pytest.fixture(scope="module")
def rendered() -> list[dict[str, Any]]:
    return build(OVERLAY)


def _labels(rendered: list[dict[str, Any]], deployment: str) -> dict[str, str]:
    labels: dict[str, str] = by_kind(rendered, "Deployment")[deployment]["spec"]["template"][
        "metadata"
    ]["labels"]
    return labels


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    for expression in selector.get("matchExpressions", []):
        present = labels.get(expression["key"])
        if expression["operator"] == "In" and present not in expression["values"]:
            return False
        if expression["operator"] == "NotIn" and present in expression["values"]:
            return False
    return True


def _peer_allows(peer: dict[str, Any], address: str) -> bool:
    block = peer.get("ipBlock")
    if block is None:
        return False  # pod and namespace selectors name cluster pods, not this address
    ip = ipaddress.ip_address(address)
    cidr = ipaddress.ip_network(block["cidr"])
    if ip.version != cidr.version or ip not in cidr:
        return False
    return not any(
        ip.version == ipaddress.ip_network(e).version and ip in ipaddress.ip_network(e)
        for e in block.get("except", [])
    )


def may_connect(rendered: list[dict[str, Any]], deployment: str, address: str, port: int) -> bool:
    """Would the NetworkPolicies let this Deployment's pods open TCP to address:port?"""
    labels = _labels(rendered, deployment)
    policies = [
        p["spec"]
        for p in by_kind(rendered, "NetworkPolicy").values()
        if "Egress" in p["spec"]["policyTypes"] and _selects(p["spec"]["podSelector"], labels)
    ]
    if not policies:
        return True  # not isolated for egress
    for policy in policies:
        for rule in policy.get("egress", []):
            ports = rule.get("ports")
            port_ok = ports is None or any(
                p.get("protocol", "TCP") == "TCP" and p.get("port") in (None, port) for p in ports
            )
            peers = rule.get("to")
            peer_ok = peers is None or any(_peer_allows(peer, address) for peer in peers)
            if port_ok and peer_ok:
                return True
    return False


@pytest.mark.parametrize("port", [443, 80, 8443])
def test_the_webhook_deliveries_reach_a_public_receiver_on_any_port(rendered, port):
    assert may_connect(rendered, "memgov-webhooks", RECEIVER, port)


@pytest.mark.parametrize("address", ["10.0.0.7", "172.20.1.1", "192.168.1.5", "169.254.169.254"])
def test_the_webhook_deliveries_never_reach_a_private_or_metadata_address(rendered, address):
    assert not may_connect(rendered, "memgov-webhooks", address, 443)


@pytest.mark.parametrize("deployment", ["memgov-web", "memgov-worker", "memgov-beat"])
def test_no_other_role_reaches_the_internet_but_all_reach_their_stores(rendered, deployment):
    assert not may_connect(rendered, deployment, RECEIVER, 443)
    assert may_connect(rendered, deployment, "10.0.0.5", 5432)  # PostgreSQL
    assert may_connect(rendered, deployment, "10.0.0.6", 6379)  # Redis
    assert may_connect(rendered, deployment, "10.0.0.8", SMTP)


def test_every_delivery_runs_on_the_pods_that_may_reach_receivers(rendered):
    """The policy is only right if the deliveries run there: their queue's worker."""
    [webhooks] = pod_specs(rendered)["memgov-webhooks"]["containers"]
    command = webhooks["command"]

    assert command[command.index("-Q") + 1] == WEBHOOK_QUEUE
    for task in ("webhooks.tasks.deliver", "webhooks.tasks.deliver_due"):
        assert celery_app.amqp.router.route({}, task)["queue"].name == WEBHOOK_QUEUE


def test_beat_keeps_its_schedule_in_redis_and_its_liveness_reads_the_heartbeat(rendered):
    [beat] = pod_specs(rendered)["memgov-beat"]["containers"]
    dockerfile = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")

    assert "--schedule" not in beat["command"]
    assert _beat_scheduler("redis://redis:6379/0") == "operations.beat:RedisScheduler"
    assert _beat_scheduler("filesystem://") == "celery.beat:PersistentScheduler"  # make run
    # The scheduler touches MEMGOV_VAR_DIR/beat-heartbeat; the image sets MEMGOV_VAR_DIR=/tmp.
    assert "MEMGOV_VAR_DIR=/tmp" in dockerfile
    assert "/tmp/beat-heartbeat" in " ".join(beat["livenessProbe"]["exec"]["command"])  # noqa: S108


def _beat_scheduler(broker: str) -> str:
    """The scheduler class beat loads with this broker, as a fresh process reads settings."""
    read = "from config.celery import app; print(app.conf.beat_scheduler)"
    env = {**os.environ, "CELERY_BROKER_URL": broker, "SECRET_KEY": "x"}
    result = subprocess.run(  # noqa: S603 - our own interpreter and settings
        [sys.executable, "-c", read], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    return result.stdout.strip()


# The connection budget: test_connection_budget.py.


def test_the_image_leaves_tests_and_benchmarks_out():
    assert dockerignored("tests/deploy/test_outages.py")
    assert dockerignored("bench/soak.py")
    assert not dockerignored("operations/probes.py")


def test_compose_publishes_the_web_port_on_loopback_unless_told_otherwise():
    [published] = load_yaml(DEPLOY / "compose.yaml")["services"]["web"]["ports"]

    assert published.startswith("${MEMGOV_PUBLISH_ADDRESS:-127.0.0.1}:")
