"""Unit level: every error a tool can meet comes back as an MCP tool error (``isError``)
carrying the problem document REST would answer — ``type``, ``status``, ``detail`` and,
for validation, ``errors`` — never a protocol error or a stack trace."""

from __future__ import annotations

import pytest
from rest_framework import exceptions, serializers

from agent_mcp.calls import Outcome, call_tool, problem
from agent_mcp.server import tool_result
from core.errors import Conflict, Forbidden, InvalidContent, NotFound, PreconditionRequired


def test_a_missing_object_is_a_404_problem():
    assert problem(NotFound("No memory mem_x.")) == {
        "type": "https://memgov.dev/problems/not-found",
        "title": "Not Found",
        "status": 404,
        "detail": "No memory mem_x.",
    }


def test_invalid_content_names_every_broken_field():
    body = problem(InvalidContent({"scope": ["task_fact scope needs 'task'"], "owner": ["x"]}))

    assert body["status"] == 422
    assert body["type"] == "https://memgov.dev/problems/unprocessable-entity"
    assert body["errors"] == {"scope": ["task_fact scope needs 'task'"], "owner": ["x"]}
    assert body["detail"] == "Invalid content: scope: task_fact scope needs 'task'"


def test_a_serializer_error_is_flattened_like_rest():
    error = serializers.ValidationError({"scenarios": [{"kind": ["not a choice"]}]})

    body = problem(error)

    assert (body["status"], body["errors"]) == (422, {"scenarios[0].kind": ["not a choice"]})


def test_a_stale_correction_carries_the_current_version():
    body = problem(Conflict("Version 1 is not the head; the head is 2.", current_version=2))

    assert (body["status"], body["current_version"]) == (409, 2)
    assert body["type"] == "https://memgov.dev/problems/conflict"


def test_a_correction_without_the_version_read_is_a_428():
    body = problem(PreconditionRequired("A correction needs 'If-Match'."))

    assert (body["status"], body["title"]) == (428, "Precondition Required")


def test_forbidden_and_unauthenticated_keep_their_statuses():
    assert problem(Forbidden("Agents never approve."))["status"] == 403
    assert problem(exceptions.AuthenticationFailed("Unknown or revoked API key."))["status"] == 401


def test_a_throttled_call_says_when_to_retry():
    body = problem(exceptions.Throttled(wait=12))

    assert body["status"] == 429
    assert body["retry_after"] == 12.0


def test_an_unexpected_failure_is_a_500_problem_that_reveals_nothing(caplog):
    body = problem(RuntimeError("database password is hunter2"))

    assert body == {
        "type": "https://memgov.dev/problems/internal-server-error",
        "title": "Internal Server Error",
        "status": 500,
        "detail": "Internal error; it has been logged.",
    }
    assert "MCP tool call failed" in caplog.text


def test_a_problem_becomes_a_tool_error_with_the_problem_as_text_and_structure():
    result = tool_result(Outcome(problem(NotFound("No entity ent_x.")), is_error=True))

    assert result.is_error is True
    assert result.structured_content is not None
    assert result.structured_content["status"] == 404
    [text] = result.content
    assert '"status": 404' in text.text  # type: ignore[union-attr]


def test_a_success_is_not_an_error():
    result = tool_result(Outcome({"decision": "none", "candidates": []}, is_error=False))

    assert result.is_error is False
    assert result.structured_content == {"decision": "none", "candidates": []}


@pytest.mark.django_db
@pytest.mark.parametrize("key", [None, "", "not-a-key", "mg_abc_wrong"])
def test_a_call_with_a_bad_key_is_a_401_tool_error(key):
    outcome = call_tool(key, "get_memory", {"memory_id": "mem_x"})

    assert outcome.is_error
    assert (outcome.body["status"], outcome.body["detail"]) == (401, "Unknown or revoked API key.")


def test_an_unknown_tool_is_a_404_naming_the_tools(world):
    outcome = call_tool(world.keys["agent"], "approve", {"memory_id": "mem_x"})

    assert outcome.is_error and outcome.body["status"] == 404
    assert outcome.body["detail"].startswith("No tool approve; the tools are resolve,")
