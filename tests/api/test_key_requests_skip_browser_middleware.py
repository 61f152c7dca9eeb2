"""A request authenticated by an API key skips what only a browser needs (sessions,
messages, CSRF, Django's auth middleware) and keeps what every response needs: the
security headers, the Content-Security-Policy and the host check. A browser's session on
the same endpoints is unchanged and still needs its CSRF token."""

from __future__ import annotations

from django.test import Client

from tests.api.support import assert_problem

_SECURITY_HEADERS = (
    "Content-Security-Policy",
    "X-Content-Type-Options",
    "Referrer-Policy",
    "Cross-Origin-Opener-Policy",
    "X-Frame-Options",
)


def test_a_key_request_runs_without_session_messages_or_csrf_cookie(world):
    response = world.client("agent").get("/api/v1/policy")

    assert response.status_code == 200
    request = response.wsgi_request
    assert not hasattr(request, "session")
    assert not hasattr(request, "_messages")
    assert "CSRF_COOKIE" not in request.META
    assert "csrftoken" not in response.cookies


def test_a_key_request_gets_the_same_security_headers_as_a_browser(world):
    browser = Client()
    browser.force_login(world.users["rita"])

    by_key = world.client("rita").get("/api/v1/policy")
    by_session = browser.get("/api/v1/policy")

    assert (by_key.status_code, by_session.status_code) == (200, 200)
    for name in _SECURITY_HEADERS:
        assert by_key.has_header(name), name
        assert by_key[name] == by_session[name], name


def test_a_key_request_for_another_host_is_still_refused(world):
    response = world.client("agent").get("/api/v1/policy", HTTP_HOST="evil.example")

    assert response.status_code == 400
    assert "Content-Security-Policy" in response


def test_a_signed_in_browser_still_needs_its_csrf_token_to_write(world):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(world.users["rita"])
    body = {"kind": "message", "content": "Hello."}

    response = browser.post("/api/v1/sources", body, content_type="application/json")

    assert_problem(response, 403)
    assert "CSRF" in response.json()["detail"]


def test_a_session_cookie_beside_a_bad_key_is_not_the_browser_signed_in(world):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(world.users["rita"])

    response = browser.post(
        "/api/v1/sources",
        {"kind": "message", "content": "Hello."},
        content_type="application/json",
        HTTP_AUTHORIZATION="Bearer mg_not_a_key",
    )

    assert_problem(response, 401)


def test_the_dashboard_with_a_bearer_header_is_still_a_browser_page(world):
    browser = Client()
    browser.force_login(world.users["rita"])

    response = browser.get("/", HTTP_AUTHORIZATION="Bearer mg_not_a_key")

    assert response.status_code == 200
    assert hasattr(response.wsgi_request, "session")
