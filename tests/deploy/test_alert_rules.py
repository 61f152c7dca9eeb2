"""Issue 47, point 6: the alerting rules, run by ``promtool test rules`` against their unit
tests (each alert fires in one case and stays silent in another), and the scrape
configuration that ships with them: its jobs are the ones the alerts read, it keeps the
pods and ports that serve metrics, and the web scrape sends the token from the Secret."""

from __future__ import annotations

import re
import subprocess
from typing import Any

import pytest
import yaml

from tests.deploy.kustomize_lite import build
from tests.deploy.support import DEPLOY, load_yaml, promtool
from tests.deploy.test_kubernetes import OVERLAY, SECRET_NAMES, by_kind

PROMETHEUS = DEPLOY / "prometheus"
RULES = PROMETHEUS / "memgov-rules.yaml"
RULE_TESTS = PROMETHEUS / "memgov-rules.test.yaml"
SCRAPE = PROMETHEUS / "prometheus.yml"
MONITORING = DEPLOY / "k8s" / "monitoring"
ROLES = {"memgov-web": "web", "memgov-worker": "worker", "memgov-webhooks": "webhooks"}


def _alerts() -> dict[str, dict[str, Any]]:
    return {r["alert"]: r for r in load_yaml(RULES)["groups"][0]["rules"] if "alert" in r}


def _promtool(*args: str) -> str:
    result = subprocess.run(  # noqa: S603 - promtool on our own files
        [promtool(), *args], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


@pytest.fixture(scope="module")
def rendered() -> list[dict[str, Any]]:
    return build(OVERLAY)


def test_the_rules_pass_their_promtool_unit_tests():
    _promtool("check", "rules", str(RULES))
    out = _promtool("test", "rules", str(RULE_TESTS))

    assert "SUCCESS" in out


def test_every_alert_fires_in_one_case_and_stays_silent_in_another():
    checks = [c for test in load_yaml(RULE_TESTS)["tests"] for c in test["alert_rule_test"]]

    for name in _alerts():
        outcomes = {bool(c["exp_alerts"]) for c in checks if c["alertname"] == name}
        assert outcomes == {True, False}, name


def test_the_gaps_of_issue_47_have_alerts():
    expressions = {name: rule["expr"] for name, rule in _alerts().items()}

    assert 'up{job="memgov-worker"}' in expressions["MemgovWorkerMissing"]
    assert 'up{job="memgov-webhooks"}' in expressions["MemgovWebhookWorkerMissing"]
    assert "memgov_beat_leader" in expressions["MemgovBeatNotLeading"]
    assert "memgov_database_up" in expressions["MemgovDatabaseDown"]
    assert "kube_deployment_status_replicas_available" in expressions["MemgovWebNoReadyPods"]
    assert "nginx_ingress_controller_requests" in expressions["MemgovIngressServerErrors"]


def _jobs_the_alerts_read() -> set[str]:
    return {j for rule in _alerts().values() for j in re.findall(r'job="([^"]+)"', rule["expr"])}


def test_the_plain_scrape_configuration_is_valid_and_has_the_jobs_the_alerts_read(tmp_path):
    config = load_yaml(SCRAPE)
    # Debian's promtool is built without Kubernetes discovery: the same jobs, checked with
    # static targets and a token file that exists.
    token = tmp_path / "token"
    token.write_text("scrape-token", encoding="utf-8")
    for job in config["scrape_configs"]:
        assert job.pop("kubernetes_sd_configs") == [
            {"role": "pod", "namespaces": {"names": ["memgov"]}}
        ]
        job["static_configs"] = [{"targets": ["10.0.0.1:8000"]}]
        if "authorization" in job:
            job["authorization"]["credentials_file"] = str(token)
    config["rule_files"] = [str(RULES)]
    checked = tmp_path / "prometheus.yml"
    checked.write_text(yaml.safe_dump(config), encoding="utf-8")

    _promtool("check", "config", str(checked))
    assert {job["job_name"] for job in config["scrape_configs"]} == set(ROLES)
    assert _jobs_the_alerts_read() == set(ROLES)


def _pod_meta(rendered: list[dict[str, Any]], deployment: str) -> dict[str, str]:
    """The labels Kubernetes discovery gives this Deployment's pods, one per port name."""
    template = by_kind(rendered, "Deployment")[deployment]["spec"]["template"]
    [container] = template["spec"]["containers"]
    labels = template["metadata"]["labels"]
    return {
        "name": labels["app.kubernetes.io/name"],
        "component": labels["app.kubernetes.io/component"],
        "ports": ",".join(p["name"] for p in container["ports"]),
    }


def test_each_plain_scrape_job_keeps_the_pods_and_port_of_its_role_only(rendered):
    jobs = {job["job_name"]: job for job in load_yaml(SCRAPE)["scrape_configs"]}

    for job_name, job in jobs.items():
        [keep] = [r for r in job["relabel_configs"] if r.get("action") == "keep"]
        kept = set()
        for deployment in ROLES:
            meta = _pod_meta(rendered, deployment)
            for port in meta["ports"].split(","):
                if re.fullmatch(keep["regex"], f"{meta['name']};{meta['component']};{port}"):
                    kept.add((deployment, port))
        expected_port = "http" if job_name == "memgov-web" else "metrics"
        assert kept == {(job_name, expected_port)}, job_name
    assert "authorization" in jobs["memgov-web"]
    assert "authorization" not in jobs["memgov-worker"]  # the worker port has no token


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    return all(
        labels.get(e["key"]) in e["values"]
        for e in selector.get("matchExpressions", [])
        if e["operator"] == "In"
    )


def test_the_pod_monitors_scrape_every_role_as_the_job_its_alert_reads(rendered):
    monitors = build(MONITORING)
    deployments = by_kind(rendered, "Deployment")
    jobs = {}

    for monitor in monitors:
        assert monitor["kind"] == "PodMonitor"
        assert monitor["metadata"]["namespace"] == "memgov"  # beside memgov-secrets
        [endpoint] = monitor["spec"]["podMetricsEndpoints"]
        for deployment in ROLES:
            template = deployments[deployment]["spec"]["template"]
            if not _selects(monitor["spec"]["selector"], template["metadata"]["labels"]):
                continue
            [container] = template["spec"]["containers"]
            assert endpoint["port"] in {p["name"] for p in container["ports"]}
            [relabel] = endpoint["relabelings"]
            component = template["metadata"]["labels"]["app.kubernetes.io/component"]
            jobs[deployment] = relabel["replacement"].replace("$1", component)
            if deployment == "memgov-web":
                credentials = endpoint["authorization"]["credentials"]
                assert credentials == {"name": "memgov-secrets", "key": "MEMGOV_METRICS_TOKEN"}
                assert credentials["key"] in SECRET_NAMES

    assert jobs == {deployment: deployment for deployment in ROLES}
