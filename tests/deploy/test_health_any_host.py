"""Probes call a pod or a container by its IP, which is not in ALLOWED_HOSTS: the two
health paths answer whatever the Host header says, and nothing else does."""

from __future__ import annotations

import pytest

from operations import health

POD_IP = "10.42.0.17:8000"


def test_liveness_answers_a_probe_that_calls_the_pod_by_its_ip(client):
    response = client.get("/healthz", HTTP_HOST=POD_IP)

    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_readiness_answers_a_probe_that_calls_the_pod_by_its_ip(client, db):
    response = client.get("/readyz", HTTP_HOST=POD_IP)

    assert response.status_code == 200
    assert response.json() == {
        "status": "ok",
        "checked": ["database", "cache", "broker"],
        "semantic": "off",
    }


def test_readiness_by_ip_still_names_what_is_down(client, db, monkeypatch):
    def refused() -> bool:
        raise ConnectionError("connection refused")

    monkeypatch.setattr(health, "_database_ok", refused)

    response = client.get("/readyz", HTTP_HOST=POD_IP)

    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "failing": "database"}


@pytest.mark.parametrize("path", ["/api/v1/sources", "/accounts/login/", "/healthz/", "/readyzz"])
def test_every_other_path_with_a_foreign_host_is_still_refused(client, db, path):
    response = client.get(path, HTTP_HOST=POD_IP)

    assert response.status_code == 400


def test_a_post_to_the_health_path_by_ip_is_not_answered_by_the_probe_shortcut(client, db):
    response = client.post("/healthz", HTTP_HOST=POD_IP)

    assert response.status_code == 400
