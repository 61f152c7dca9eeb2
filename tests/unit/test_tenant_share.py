"""Issue 33, point 13: a tenant's share of a web process's request threads
(``gateway.tenant_share.TenantShareMiddleware``). A request running is simulated by asking
the middleware again from inside the view of the first."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.test import RequestFactory

from accounts import throttle
from gateway.tenant_share import UNVERIFIED, TenantShareMiddleware, tenant_of

RAW = "mg_0123456789ab_secret"


@pytest.fixture
def known_key() -> str:
    """``RAW`` as a key this process has seen authenticate, for tenant 7."""
    key = SimpleNamespace(key_hash=hashlib.sha256(RAW.encode()).hexdigest())
    principal: Any = SimpleNamespace(api_key=key, tenant=SimpleNamespace(pk=7))
    throttle.remember_tenant(principal)
    return RAW


def _request(key: str | None = None) -> HttpRequest:
    headers = {} if key is None else {"Authorization": f"Bearer {key}"}
    return RequestFactory().get("/api/v1/memories", headers=headers)


def _share(
    settings: Any, max_in_flight: int, view: Callable[[HttpRequest], HttpResponseBase]
) -> TenantShareMiddleware:
    settings.TENANT_MAX_IN_FLIGHT = max_in_flight
    return TenantShareMiddleware(view)


def test_a_tenant_at_its_cap_is_refused_at_once_and_the_others_are_not(settings, known_key):
    meanwhile: dict[str, int] = {}

    def view(request: HttpRequest) -> HttpResponse:
        if not meanwhile:  # the first request, still running while these come
            meanwhile["same tenant"] = share(_request(known_key)).status_code
            meanwhile["other tenant"] = share(_request("mg_other_key")).status_code
            meanwhile["no key"] = share(_request()).status_code
        return HttpResponse("ok")

    share = _share(settings, 1, view)

    assert share(_request(known_key)).status_code == 200
    assert meanwhile == {"same tenant": 429, "other tenant": 200, "no key": 200}
    assert share(_request(known_key)).status_code == 200  # its slot was given back


def test_the_refusal_is_a_problem_that_says_when_to_retry(settings, known_key):
    refused: list[Any] = []

    def view(request: HttpRequest) -> HttpResponse:
        if not refused:
            refused.append(share(_request(known_key)))
        return HttpResponse("ok")

    share = _share(settings, 1, view)
    share(_request(known_key))

    [response] = refused
    assert response["Content-Type"] == "application/problem+json"
    assert response["Retry-After"] == "1"
    assert json.loads(response.content)["status"] == 429


def test_a_view_that_fails_gives_its_slot_back(settings, known_key):
    def failing(request: HttpRequest) -> HttpResponse:
        raise RuntimeError("the view failed")

    share = _share(settings, 1, failing)
    with pytest.raises(RuntimeError):
        share(_request(known_key))

    share.get_response = lambda request: HttpResponse("ok")
    assert share(_request(known_key)).status_code == 200


def test_no_cap_when_it_is_zero(settings, known_key):
    depth: list[int] = []

    def view(request: HttpRequest) -> HttpResponseBase:
        depth.append(1)
        if len(depth) < 5:  # each request asks again while it runs: five at once
            return share(_request(known_key))
        return HttpResponse("ok")

    share = _share(settings, 0, view)

    assert share(_request(known_key)).status_code == 200
    assert len(depth) == 5


def test_a_request_counts_for_its_keys_tenant_only_once_that_key_has_authenticated():
    raw = "mg_fedcba987654_secret"
    key = SimpleNamespace(key_hash=hashlib.sha256(raw.encode()).hexdigest())
    principal: Any = SimpleNamespace(api_key=key, tenant=SimpleNamespace(pk=8))

    before = tenant_of(_request(raw))
    throttle.remember_tenant(principal)

    assert before == UNVERIFIED
    assert tenant_of(_request(raw)) == 8
    assert tenant_of(_request("mg_fedcba987654_guessed")) == UNVERIFIED  # same prefix
    basic = RequestFactory().get("/", headers={"Authorization": "Basic eDp5"})
    assert tenant_of(basic) == UNVERIFIED
    assert tenant_of(_request()) is None  # no key: the dashboard, health
