"""Issue 42, point 7: a tenant's requests count in its share of a web process's threads
whichever way they authenticate. A dashboard session (or the REST API used from a signed-in
browser) is refused at the cap like an API key; anonymous requests are not counted. A
request running is simulated by asking the middleware again from inside the view of the
first (as in ``tests/unit/test_tenant_share.py``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.test import Client, RequestFactory

from gateway.tenant_share import TenantShareMiddleware, tenant_of

pytestmark = pytest.mark.django_db


def _session_cookie(user: User) -> str:
    client = Client()
    client.force_login(user)
    return str(client.cookies[settings.SESSION_COOKIE_NAME].value)


def _request(path: str = "/", *, cookie: str = "", key: str = "") -> HttpRequest:
    factory = RequestFactory()
    if cookie:
        factory.cookies[settings.SESSION_COOKIE_NAME] = cookie
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return factory.get(path, headers=headers)


def _share_with_one_slot(
    settings: Any, meanwhile: Callable[[], dict[str, int]]
) -> tuple[TenantShareMiddleware, dict[str, int]]:
    """A cap of one: while the first request's view runs, ``meanwhile`` asks again; what
    it was answered fills the dict."""
    asked: dict[str, int] = {}
    first = [True]

    def view(request: HttpRequest) -> HttpResponse:
        if first:  # only the first request's view asks, while it runs
            first.clear()
            asked.update(meanwhile())
        return HttpResponse("ok")

    settings.TENANT_MAX_IN_FLIGHT = 1
    return TenantShareMiddleware(view), asked


def test_a_signed_in_session_counts_for_its_persons_tenant(world: Any) -> None:
    rita, zed = world.users["rita"], world.users["zed"]

    assert tenant_of(_request(cookie=_session_cookie(rita))) == world.tenant.pk
    assert tenant_of(_request(cookie=_session_cookie(zed))) == world.other_tenant.pk
    assert tenant_of(_request(cookie="madeup0123456789abcdefghijklmnop")) is None
    assert tenant_of(_request()) is None


def test_a_session_at_its_tenants_cap_is_refused_like_a_key_and_the_other_tenant_is_not(
    settings: Any, world: Any
) -> None:
    rita_session = _session_cookie(world.users["rita"])
    nora_session = _session_cookie(world.users["nora"])  # same tenant, another person
    zed_session = _session_cookie(world.users["zed"])
    # Given the process has seen Acme's key authenticate (as it has after its first call).
    assert world.client("agent").get("/api/v1/memories").status_code == 200

    def meanwhile() -> dict[str, int]:
        return {
            "same session": share(_request(cookie=rita_session)).status_code,
            "same tenant, other person": share(_request(cookie=nora_session)).status_code,
            "same tenant, API key": share(_request(key=world.keys["agent"])).status_code,
            "same tenant, API by session": share(
                _request("/api/v1/memories", cookie=rita_session)
            ).status_code,
            "other tenant by session": share(_request(cookie=zed_session)).status_code,
        }

    share, asked = _share_with_one_slot(settings, meanwhile)

    # When Rita's dashboard request holds Acme's one slot.
    assert share(_request(cookie=rita_session)).status_code == 200

    # Then every other request of Acme is refused at once, however it authenticates, and
    # Globex's is answered.
    assert asked == {
        "same session": 429,
        "same tenant, other person": 429,
        "same tenant, API key": 429,
        "same tenant, API by session": 429,
        "other tenant by session": 200,
    }
    assert share(_request(cookie=rita_session)).status_code == 200  # the slot came back


def test_a_key_at_its_tenants_cap_holds_off_that_tenants_sessions_too(
    settings: Any, world: Any
) -> None:
    rita_session = _session_cookie(world.users["rita"])
    assert world.client("agent").get("/api/v1/memories").status_code == 200

    def meanwhile() -> dict[str, int]:
        return {"session": share(_request(cookie=rita_session)).status_code}

    share, asked = _share_with_one_slot(settings, meanwhile)

    assert share(_request("/api/v1/memories", key=world.keys["agent"])).status_code == 200
    assert asked == {"session": 429}


def test_anonymous_pages_health_probes_and_static_files_stay_outside_the_cap(
    settings: Any, world: Any
) -> None:
    rita_session = _session_cookie(world.users["rita"])

    def meanwhile() -> dict[str, int]:
        return {
            "sign-in page": share(_request("/accounts/login/")).status_code,
            "sign-in page, stale cookie": share(
                _request("/accounts/login/", cookie="expired0123456789abcdefghijklmno")
            ).status_code,
            "health probe": share(_request("/healthz")).status_code,
            "readiness probe": share(_request("/readyz")).status_code,
            "static file": share(
                _request(f"{settings.STATIC_URL}dashboard.css", cookie=rita_session)
            ).status_code,
        }

    share, asked = _share_with_one_slot(settings, meanwhile)

    assert share(_request(cookie=rita_session)).status_code == 200
    assert asked == {
        "sign-in page": 200,
        "sign-in page, stale cookie": 200,
        "health probe": 200,
        "readiness probe": 200,
        "static file": 200,
    }


def test_a_session_is_looked_up_once_per_process_so_a_refusal_costs_no_query(
    settings: Any, world: Any, django_assert_num_queries: Any
) -> None:
    rita_session = _session_cookie(world.users["rita"])
    with django_assert_num_queries(2):  # the session, the membership
        assert tenant_of(_request(cookie=rita_session)) == world.tenant.pk
    with django_assert_num_queries(0):
        assert tenant_of(_request(cookie=rita_session)) == world.tenant.pk


def test_a_deactivated_persons_session_is_anonymous(world: Any) -> None:
    nora = world.users["nora"]
    cookie = _session_cookie(nora)
    User.objects.filter(pk=nora.pk).update(is_active=False)

    assert tenant_of(_request(cookie=cookie)) is None
