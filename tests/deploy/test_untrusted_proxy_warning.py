"""Behind an ingress that nobody trusted (``MEMGOV_TRUSTED_PROXIES=0``) every client has
the ingress's address, so one client's failed sign-ins lock a username out for all
(issue 47, point 7). The first request that shows a proxy says so, once per process: once
per Django handler, and each test's ``client`` is a handler of its own."""

from __future__ import annotations

import logging

import pytest

pytestmark = pytest.mark.django_db
FORWARDED = {"HTTP_X_FORWARDED_FOR": "203.0.113.7", "REMOTE_ADDR": "10.0.0.5"}


def _warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "gateway.security"]


def test_requests_through_an_untrusted_proxy_are_warned_about_once(client, settings, caplog):
    settings.TRUSTED_PROXIES = 0

    with caplog.at_level(logging.WARNING, logger="gateway.security"):
        client.get("/accounts/login/", **FORWARDED)
        client.get("/accounts/login/", **FORWARDED)
        client.get("/accounts/login/", **FORWARDED)

    [warning] = _warnings(caplog)
    assert "MEMGOV_TRUSTED_PROXIES=0" in warning
    assert "10.0.0.5" in warning


def test_a_trusted_proxy_or_a_direct_client_is_not_warned_about(client, settings, caplog):
    with caplog.at_level(logging.WARNING, logger="gateway.security"):
        settings.TRUSTED_PROXIES = 0
        client.get("/accounts/login/")  # no proxy in front
        settings.TRUSTED_PROXIES = 1
        client.get("/accounts/login/", **FORWARDED)

    assert _warnings(caplog) == []
