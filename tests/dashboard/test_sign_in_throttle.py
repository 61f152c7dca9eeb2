"""Issue 33, point 10: one sign-in throttle for every password login — the dashboard's and
the Django admin's — counted per username and client address, where the client address is
what the trusted proxies report (``MEMGOV_TRUSTED_PROXIES``), and REMOTE_ADDR otherwise.

rita is the demo's tenant admin (staff), so both sign-in pages would let her in."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth import authenticate
from django.core.cache import cache
from django.test import Client, RequestFactory

from accounts.sign_in import locked_message
from tests.dashboard.support import DEMO_PASSWORD, Demo

PROXY = "10.0.0.5"  # the ingress: every request reaches Django from it


@pytest.fixture(autouse=True)
def _no_failures_counted_yet() -> Iterator[None]:
    cache.clear()  # the counters live in the cache (this run's own database on Redis)
    yield
    cache.clear()


def _sign_in(
    page: str,
    username: str,
    password: str,
    address: str = "203.0.113.7",
    forwarded_for: str | None = None,
) -> str:
    client = Client(REMOTE_ADDR=address)
    if forwarded_for is not None:
        client.defaults["HTTP_X_FORWARDED_FOR"] = forwarded_for
    response = client.post(page, {"username": username, "password": password, "next": "/admin/"})
    return "signed in" if response.status_code == 302 else response.content.decode()


def _right(username: str) -> str:
    return DEMO_PASSWORD.format(username)


def test_fifteen_wrong_admin_passwords_then_the_right_one_is_refused(demo: Demo) -> None:
    answers = [_sign_in("/admin/login/", "rita", "guess") for _ in range(15)]

    assert all(locked_message("address") not in answer for answer in answers[:5])
    assert all(locked_message("address") in answer for answer in answers[5:])
    assert locked_message("address") in _sign_in("/admin/login/", "rita", _right("rita"))


def test_failures_on_the_dashboard_lock_the_admin_login_too(demo: Demo) -> None:
    for _ in range(5):
        _sign_in("/accounts/login/", "rita", "guess")

    assert locked_message("address") in _sign_in("/admin/login/", "rita", _right("rita"))
    assert locked_message("address") in _sign_in("/accounts/login/", "rita", _right("rita"))


def test_two_clients_behind_a_trusted_proxy_do_not_lock_each_other_out(
    demo: Demo, settings: Any
) -> None:
    settings.TRUSTED_PROXIES = 1
    attacker = "203.0.113.7"
    rita = "198.51.100.2"
    for _ in range(6):
        _sign_in("/accounts/login/", "rita", "guess", address=PROXY, forwarded_for=attacker)

    assert locked_message("address") in _sign_in(
        "/accounts/login/", "rita", _right("rita"), address=PROXY, forwarded_for=attacker
    )
    assert _sign_in(
        "/accounts/login/", "rita", _right("rita"), address=PROXY, forwarded_for=rita
    ) == ("signed in")
    assert (
        _sign_in("/admin/login/", "rita", _right("rita"), address=PROXY, forwarded_for=rita)
        == "signed in"
    )


def test_only_the_address_the_trusted_proxy_appended_counts(demo: Demo, settings: Any) -> None:
    """A client may send its own X-Forwarded-For; the proxy appends the address it saw, so
    with one trusted proxy only the last entry is believed."""
    settings.TRUSTED_PROXIES = 1
    for number in range(6):
        spoofed = f"192.0.2.{number}, 203.0.113.7"
        _sign_in("/accounts/login/", "rita", "guess", address=PROXY, forwarded_for=spoofed)

    refused = _sign_in(
        "/accounts/login/",
        "rita",
        _right("rita"),
        address=PROXY,
        forwarded_for="192.0.2.99, 203.0.113.7",
    )
    assert locked_message("address") in refused


def test_a_spoofed_forwarded_for_is_ignored_when_no_proxy_is_trusted(demo: Demo) -> None:
    """The default trusts no header: a client rotating X-Forwarded-For is still one
    address (this held before issue 33 too; it must keep holding)."""
    for number in range(6):
        spoofed = f"192.0.2.{number}"
        _sign_in("/admin/login/", "rita", "guess", forwarded_for=spoofed)

    refused = _sign_in("/admin/login/", "rita", _right("rita"), forwarded_for="192.0.2.77")
    assert locked_message("address") in refused


def test_failures_from_many_addresses_lock_the_username_but_not_where_its_owner_signs_in(
    demo: Demo, settings: Any
) -> None:
    """Per (username, address) an attacker gets 5 tries per address; per username, all
    addresses together get ``LOGIN_USERNAME_FAILURE_LIMIT``. Past it the username is
    refused from new addresses until the window ends, but not from an address where it
    signed in before: an attacker elsewhere cannot lock its owner out."""
    settings.LOGIN_USERNAME_FAILURE_LIMIT = 8
    assert _sign_in("/accounts/login/", "rita", _right("rita"), address="198.51.100.2") == (
        "signed in"
    )
    for number in range(4):
        for _ in range(2):
            _sign_in("/accounts/login/", "rita", "guess", address=f"192.0.2.{number}")

    new_address = _sign_in("/admin/login/", "rita", _right("rita"), address="192.0.2.200")
    assert locked_message("username") in new_address
    assert _sign_in("/admin/login/", "rita", _right("rita"), address="198.51.100.2") == (
        "signed in"
    )
    assert _sign_in("/accounts/login/", "omar", _right("omar"), address="192.0.2.200") == (
        "signed in"
    )


def test_a_locked_username_cannot_sign_in_through_any_password_login(demo: Demo) -> None:
    """``django.contrib.auth.authenticate`` itself refuses: any view or API that checks a
    password goes through it."""
    for _ in range(5):
        _sign_in("/accounts/login/", "rita", "guess")

    request = RequestFactory().post("/api/anything", REMOTE_ADDR="203.0.113.7")
    assert authenticate(request, username="rita", password=_right("rita")) is None
