"""One tool call, synchronously (Django's ORM is synchronous; ``agent_mcp.server`` runs
this in a worker thread): authenticate the key, throttle, pass the arguments through the
input boundary a REST body passes (``core.inputs``; the tools' shapes are the REST
serializers), replay an idempotent retry, run the tool, and turn any error into the
problem answer the REST API would give."""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from typing import Any

from django.db import connections
from rest_framework import exceptions

from accounts.keys import api_key_for_raw
from agent_interface import answers
from agent_interface.auth import throttle_wait
from agent_interface.problems import problem_body, problem_exception_handler
from agent_mcp.spec import ToolSpec
from agent_mcp.tools import BY_NAME, IdempotencyArgument
from core.errors import NotFound
from core.inputs import checked_json
from core.models import IdempotencyRecord
from core.principals import Principal, principal_for_key
from memory import idempotency

logger = logging.getLogger(__name__)
BAD_KEY = "Unknown or revoked API key."


@dataclass(frozen=True)
class Outcome:
    """A tool's answer: the REST body on success, the problem document on error."""

    body: dict[str, Any]
    is_error: bool


def fresh_connections() -> None:
    """What Django does around each request (drop broken or expired connections), except
    for a connection inside a transaction: that is a caller's (a test's) and stays."""
    for connection in connections.all(initialized_only=True):
        if not connection.in_atomic_block:
            connection.close_if_unusable_or_obsolete()


def authenticate(raw_key: str | None) -> Principal:
    """The same check as the REST API's ``Authorization: Bearer``: a revoked or expired key,
    or a deactivated person's, is refused on its next use."""
    key = api_key_for_raw(raw_key.strip()) if raw_key and raw_key.strip() else None
    if key is None:
        raise exceptions.AuthenticationFailed(BAD_KEY)
    return principal_for_key(key)


def problem(exc: Exception) -> dict[str, Any]:
    """The problem document REST would answer for ``exc`` (same handler, same shape);
    ``Retry-After`` travels as ``retry_after`` since a tool result has no headers."""
    response = problem_exception_handler(exc, {})
    if response is None:
        logger.exception("MCP tool call failed", exc_info=exc)
        return problem_body(500, "Internal error; it has been logged.")
    body = dict(response.data)
    if "Retry-After" in response.headers:
        body["retry_after"] = float(response.headers["Retry-After"])
    return body


def _digest(tool: ToolSpec, principal: Principal, args: dict[str, Any]) -> str:
    canonical = json.dumps(args, sort_keys=True, separators=(",", ":"), default=str)
    head = f"MCP {tool.name} {principal.name}\n"
    return hashlib.sha256(head.encode() + canonical.encode()).hexdigest()


def _run(tool: ToolSpec, principal: Principal, args: dict[str, Any]) -> Outcome:
    try:
        return Outcome(tool.run(principal, args), is_error=False)
    except Exception as exc:  # every error becomes a problem answer, as in REST
        return Outcome(problem(exc), is_error=True)


def _run_once(tool: ToolSpec, principal: Principal, args: dict[str, Any], key: str) -> Outcome:
    """Idempotency-Key semantics (docs/api.md): a retry with the same key and arguments gets the
    first answer; the same key with other arguments is a 422."""
    try:
        record: IdempotencyRecord = idempotency.reserve(
            principal, key.strip(), _digest(tool, principal, args)
        )
    except idempotency.Replay as replay:
        return Outcome(dict(replay.answer.body), is_error=replay.answer.status >= 400)
    outcome = _run(tool, principal, args)
    status = int(outcome.body.get("status", 500)) if outcome.is_error else 200
    idempotency.record_answer(record, status, outcome.body, {})
    return outcome


def call_tool(raw_key: str | None, name: str, arguments: dict[str, Any] | None) -> Outcome:
    fresh_connections()
    try:
        principal = authenticate(raw_key)
        wait = throttle_wait(principal)
        if wait is not None:
            raise exceptions.Throttled(wait)
        tool = BY_NAME.get(name)
        if tool is None:
            raise NotFound(f"No tool {name}; the tools are {', '.join(BY_NAME)}.")
        args = dict(checked_json(arguments or {}))
        if tool.writes and "idempotency_key" in args:
            key = args.pop("idempotency_key")
            valid = answers.validated(IdempotencyArgument, {"idempotency_key": key})
            return _run_once(tool, principal, args, valid["idempotency_key"])
        return _run(tool, principal, args)
    except Exception as exc:  # authentication, throttling, idempotency conflicts
        return Outcome(problem(exc), is_error=True)
    finally:
        fresh_connections()


def check_key(raw_key: str | None) -> str | None:
    """None when the key may connect, else why not (the stdio command's start check)."""
    fresh_connections()
    try:
        authenticate(raw_key)
    except exceptions.AuthenticationFailed as exc:
        return str(exc.detail)
    finally:
        fresh_connections()
    return None
