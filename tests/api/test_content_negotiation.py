"""The JSON API answers JSON whatever the client's Accept header asks for (DRF's fixed
content negotiation), and still refuses a body that is not JSON."""

from __future__ import annotations

import pytest

from tests.api.support import assert_problem, create_entity


@pytest.mark.parametrize("accept", ["text/html", "application/xml", "application/problem+json"])
def test_an_agent_asking_for_another_media_type_still_gets_the_json_answer(world, accept: str):
    agent = world.client("agent")
    dana = create_entity(agent)

    response = agent.post(
        "/api/v1/resolve", {"subject": dana, "context": {}}, "json", HTTP_ACCEPT=accept
    )

    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "application/json"
    assert response.json()["facts"] == []


def test_an_error_asked_for_as_html_is_still_a_problem_document(world):
    body = {"subject": "ent_missing", "context": {}}

    response = world.client("agent").post("/api/v1/resolve", body, "json", HTTP_ACCEPT="text/html")

    assert_problem(response, 404)


def test_a_form_body_is_still_a_415_under_fixed_negotiation(world):
    response = world.client("agent").post(
        "/api/v1/resolve", "subject=x", content_type="application/x-www-form-urlencoded"
    )

    assert_problem(response, 415)
