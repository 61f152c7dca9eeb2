import pytest


@pytest.mark.django_db
def test_healthz_answers_ok(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_unknown_api_path_is_a_problem_404(client, db):
    response = client.get("/api/v1/no-such-thing")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/problem+json"


def test_agent_can_record_a_source(world):
    response = world.client("agent").post(
        "/api/v1/sources", {"kind": "message", "content": "hello"}, format="json"
    )
    assert response.status_code == 201
    assert response.json()["content_sha256"].startswith("2cf24dba")
