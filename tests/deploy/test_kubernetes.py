"""The Kubernetes manifests (kustomize base + example overlay) are valid against a current
schema, and the rendered output keeps the promises an operator relies on: one migration
Job, probes on the host-agnostic health paths, limits and a non-root, read-only container
everywhere, exactly one beat, workers that finish their tasks, secrets never inlined."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from django.conf import settings

from tests.deploy.kustomize_lite import build
from tests.deploy.support import DEPLOY

BASE = DEPLOY / "k8s" / "base"
OVERLAY = DEPLOY / "k8s" / "overlays" / "example"
MIGRATE = DEPLOY / "k8s" / "migrate"
SECRET_NAMES = {
    *("SECRET_KEY", "DATABASE_URL", "REDIS_URL", "CACHE_URL", "EMAIL_URL"),
    "MEMGOV_METRICS_TOKEN",
}
SCHEMA_VERSION = "1.33.0"  # a current Kubernetes release, also checked against the newest


def by_kind(resources: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {r["metadata"]["name"]: r for r in resources if r["kind"] == kind}


def pod_specs(resources: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {
        r["metadata"]["name"]: r["spec"]["template"]["spec"]
        for r in resources
        if r["kind"] in ("Deployment", "Job")
    }


@pytest.fixture(scope="module")
def rendered() -> list[dict[str, Any]]:
    return build(OVERLAY)


def _key(resource: dict[str, Any]) -> tuple[str, str]:
    return resource["kind"], resource["metadata"]["name"]


@pytest.mark.parametrize(
    "directory",
    [BASE, MIGRATE, OVERLAY / "migrate", OVERLAY],
    ids=["base", "job", "named", "overlay"],
)
def test_kubectl_kustomize_renders_what_the_tests_check(directory: Path):
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("no kubectl here; the tests use kustomize_lite's rendering")
    shown = subprocess.run(  # noqa: S603 - renders files of this repository, offline
        [kubectl, "kustomize", str(directory)], capture_output=True, text=True, check=True
    )
    theirs = [r for r in yaml.safe_load_all(shown.stdout) if r]

    assert sorted(theirs, key=_key) == sorted(build(directory), key=_key)


@pytest.mark.parametrize("version", [SCHEMA_VERSION, kubernetes_validate.latest_version()])
@pytest.mark.parametrize("directory", [BASE, OVERLAY], ids=["base", "overlay"])
def test_every_resource_is_valid_against_the_kubernetes_schema(directory: Path, version: str):
    resources = build(directory)

    assert len(resources) >= 12
    for resource in resources:
        kubernetes_validate.validate(resource, version, strict=True)


def test_the_overlay_deploys_a_released_image_into_its_namespace(rendered):
    images = {c["image"] for spec in pod_specs(rendered).values() for c in _all(spec)}

    assert images == {"registry.example.com/memgov:1.0.0"}
    assert {r["metadata"]["namespace"] for r in rendered} == {"memgov"}
    assert by_kind(rendered, "Deployment")["memgov-worker"]["spec"]["replicas"] == 3


def _all(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [*spec.get("initContainers", []), *spec["containers"]]


def test_every_container_has_limits_and_a_non_root_read_only_security_context(rendered):
    for name, spec in pod_specs(rendered).items():
        assert spec["securityContext"]["runAsNonRoot"] is True, name
        assert spec["securityContext"]["runAsUser"] != 0, name
        assert spec["automountServiceAccountToken"] is False, name
        for container in _all(spec):
            where = f"{name}/{container['name']}"
            resources = container["resources"]
            assert set(resources["requests"]) == {"cpu", "memory"}, where
            assert set(resources["limits"]) == {"cpu", "memory"}, where
            context = container["securityContext"]
            assert context["allowPrivilegeEscalation"] is False, where
            assert context["readOnlyRootFilesystem"] is True, where
            assert context["capabilities"] == {"drop": ["ALL"]}, where
            assert container["volumeMounts"] == [{"name": "tmp", "mountPath": "/tmp"}], where  # noqa: S108


def test_every_long_running_container_has_a_liveness_probe(rendered):
    for name, spec in pod_specs(rendered).items():
        if by_kind(rendered, "Job").get(name):
            continue  # a Job ends by itself
        for container in spec["containers"]:
            assert "livenessProbe" in container, f"{name}/{container['name']}"


def test_web_probes_use_the_health_paths_that_answer_any_host(rendered, client, db):
    [web] = pod_specs(rendered)["memgov-web"]["containers"]
    paths = {
        probe: web[probe]["httpGet"]["path"]
        for probe in ("startupProbe", "readinessProbe", "livenessProbe")
    }

    assert paths == {
        "startupProbe": "/healthz",
        "readinessProbe": "/readyz",
        "livenessProbe": "/healthz",
    }
    for path in set(paths.values()):  # the kubelet calls the pod by its IP
        assert client.get(path, HTTP_HOST="10.42.0.17:8000").status_code == 200


def test_web_probes_call_the_probe_port_that_no_service_exposes(rendered):
    [web] = pod_specs(rendered)["memgov-web"]["containers"]
    ports = {p["name"]: p["containerPort"] for p in web["ports"]}
    probes = {
        web[probe]["httpGet"]["port"]
        for probe in ("startupProbe", "readinessProbe", "livenessProbe")
    }
    exposed = {
        port["targetPort"]
        for service in by_kind(rendered, "Service").values()
        for port in service["spec"]["ports"]
    }

    assert probes == {"probes"}
    assert ports == {"http": 8000, "probes": 8001}
    assert exposed == {"http"}
    # Readiness answers within MEMGOV_READY_TIMEOUT_SECONDS, inside the probe's timeout.
    assert web["readinessProbe"]["timeoutSeconds"] > settings.MEMGOV_READY_TIMEOUT_SECONDS


def test_migrations_run_in_one_job_and_never_in_the_web_replicas(rendered):
    commands = {
        f"{name}/{c['name']}": " ".join(c.get("command", []))
        for name, spec in pod_specs(rendered).items()
        for c in _all(spec)
    }
    migrating = {where for where, command in commands.items() if "migrate" in command}
    [job] = by_kind(rendered, "Job").values()

    assert migrating == {
        "memgov-migrate-1-0-0/migrate",
        # Every role waits for the schema before it starts (issue 36, point 11).
        "memgov-web/wait-for-migrations",
        "memgov-worker/wait-for-migrations",
        "memgov-webhooks/wait-for-migrations",
        "memgov-beat/wait-for-migrations",
    }
    assert commands["memgov-migrate-1-0-0/migrate"] == "python manage.py migrate --no-input"
    for role in ("web", "worker", "webhooks", "beat"):
        assert "migrate --check" in commands[f"memgov-{role}/wait-for-migrations"]
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    assert job["spec"]["backoffLimit"] == 3


def test_each_release_applies_its_own_migration_job_and_none_needs_deleting(rendered):
    # A Job's pod template is immutable: one fixed name would make `kubectl apply` of the
    # next release fail until someone deleted the last release's Job (issue 36, point 11).
    [job] = by_kind(rendered, "Job").values()
    [image] = {c["image"] for c in _all(job["spec"]["template"]["spec"])}
    tag = image.rsplit(":", 1)[1]

    assert job["metadata"]["name"] == "memgov-migrate-" + tag.replace(".", "-")
    assert not by_kind(build(BASE), "Job")  # only an overlay, which knows the release, names it
    # A finished Job removes itself, after a while to read its logs.
    assert 0 < job["spec"]["ttlSecondsAfterFinished"] <= 86400
    # A run stuck behind a lock ends; lock_timeout makes each attempt fail fast instead.
    assert job["spec"]["activeDeadlineSeconds"] <= 900


def test_exactly_one_beat_even_during_a_rollout(rendered):
    beat = by_kind(rendered, "Deployment")["memgov-beat"]
    autoscaled = {
        h["spec"]["scaleTargetRef"]["name"]
        for h in by_kind(rendered, "HorizontalPodAutoscaler").values()
    }

    assert beat["spec"]["replicas"] == 1
    assert beat["spec"]["strategy"] == {"type": "Recreate"}
    assert "memgov-beat" not in autoscaled


def test_workers_get_time_to_finish_acks_late_tasks_before_redelivery(rendered):
    worker = pod_specs(rendered)["memgov-worker"]
    grace = worker["terminationGracePeriodSeconds"]
    visibility = settings.CELERY_BROKER_TRANSPORT_OPTIONS.get("visibility_timeout", 3600)

    assert settings.CELERY_TASK_ACKS_LATE is True
    assert 120 <= grace < visibility


def test_web_is_autoscaled_and_protected_from_voluntary_disruption(rendered):
    web = by_kind(rendered, "Deployment")["memgov-web"]
    [pdb] = by_kind(rendered, "PodDisruptionBudget").values()
    [hpa] = by_kind(rendered, "HorizontalPodAutoscaler").values()
    selector = web["spec"]["selector"]["matchLabels"]

    assert pdb["spec"]["selector"]["matchLabels"] == selector
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "memgov-web",
    }
    assert hpa["spec"]["minReplicas"] > pdb["spec"]["minAvailable"]
    assert web["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0


def test_only_the_ingress_and_monitoring_reach_web_and_nothing_reaches_the_rest(rendered):
    policies = by_kind(rendered, "NetworkPolicy")
    deny = policies["memgov-no-ingress"]["spec"]
    web = policies["memgov-web-ingress"]["spec"]

    assert deny["podSelector"]["matchLabels"] == {"app.kubernetes.io/name": "memgov"}
    assert deny["ingress"] == []
    assert web["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "web"
    assert web["ingress"][0]["ports"] == [{"protocol": "TCP", "port": 8000}]
    metrics = policies["memgov-worker-metrics"]["spec"]
    assert metrics["ingress"][0]["ports"] == [{"protocol": "TCP", "port": 9808}]
    assert metrics["ingress"][0]["from"] == [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
    ]
    assert "Egress" in policies["memgov-egress"]["spec"]["policyTypes"]


def test_workers_expose_their_metrics_port_named_in_the_policy(rendered):
    [worker] = pod_specs(rendered)["memgov-worker"]["containers"]
    env = {e["name"]: e["value"] for e in worker["env"]}

    assert env["MEMGOV_WORKER_METRICS_PORT"] == "9808"
    assert worker["ports"] == [{"name": "metrics", "containerPort": 9808}]


def test_secrets_are_referenced_and_never_inlined(rendered):
    config_values = {
        name for cm in by_kind(rendered, "ConfigMap").values() for name in cm.get("data", {})
    }

    assert by_kind(rendered, "Secret") == {}
    assert not (config_values & SECRET_NAMES)
    for name, spec in pod_specs(rendered).items():
        for container in _all(spec):
            refs = [e["secretRef"]["name"] for e in container["envFrom"] if "secretRef" in e]
            assert refs == ["memgov-secrets"], name
            inline = {e["name"] for e in container.get("env", []) if "value" in e}
            assert not (inline & SECRET_NAMES), name


def test_web_trusts_its_one_ingress_so_each_client_has_its_own_sign_in_throttle(rendered):
    [config] = by_kind(rendered, "ConfigMap").values()

    # Only the ingress reaches web (the NetworkPolicy above): its X-Forwarded-For entry
    # is the client's address. With 0, every client would share one lockout.
    assert config["data"]["MEMGOV_TRUSTED_PROXIES"] == "1"
    assert config["data"]["MEMGOV_TRUST_X_FORWARDED_PROTO"] == "true"
