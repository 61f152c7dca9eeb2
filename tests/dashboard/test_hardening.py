"""Issue 11, point 9: sign-in throttling, the Content-Security-Policy on every dashboard
page (which has no inline script or style to need an exception), HSTS behind https."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.cache import cache
from django.test import Client

from accounts.sign_in import locked_message
from gateway.security import SELF_ONLY_POLICY
from tests.dashboard.support import DEMO_PASSWORD, Demo

ROOT = Path(__file__).resolve().parents[2]
LOCKED_MESSAGE = locked_message("address")


@pytest.fixture(autouse=True)
def _no_failures_counted_yet() -> Iterator[None]:
    cache.clear()  # the counters live in the cache (this run's own database on Redis)
    yield
    cache.clear()


def _sign_in(username: str, password: str, address: str = "203.0.113.7") -> str:
    response = Client(REMOTE_ADDR=address).post(
        "/accounts/login/", {"username": username, "password": password}
    )
    return "signed in" if response.status_code == 302 else response.content.decode()


def test_fifteen_wrong_passwords_then_the_right_one_is_refused(demo: Demo) -> None:
    answers = [_sign_in("rita", "guess") for _ in range(15)]

    assert all("do not match" in answer for answer in answers[:5])
    assert all(LOCKED_MESSAGE in answer for answer in answers[5:])
    refused = _sign_in("rita", DEMO_PASSWORD.format("rita"))

    assert LOCKED_MESSAGE in refused


def test_four_wrong_passwords_then_the_right_one_signs_in_and_resets_the_count(
    demo: Demo,
) -> None:
    for _ in range(4):
        _sign_in("rita", "guess")

    assert _sign_in("rita", DEMO_PASSWORD.format("rita")) == "signed in"
    for _ in range(4):
        _sign_in("rita", "guess")
    assert _sign_in("rita", DEMO_PASSWORD.format("rita")) == "signed in"


def test_the_lock_holds_one_username_from_one_address_only(demo: Demo) -> None:
    for _ in range(5):
        _sign_in("Rita", "guess")

    assert LOCKED_MESSAGE in _sign_in("rita", DEMO_PASSWORD.format("rita"))
    assert _sign_in("rita", DEMO_PASSWORD.format("rita"), address="198.51.100.2") == "signed in"
    assert _sign_in("omar", DEMO_PASSWORD.format("omar")) == "signed in"


def _dashboard_pages(demo: Demo) -> list[str]:
    items = [f"/memories/{memory_id}/" for memory_id in demo.items.values()]
    return [
        "/",
        "/queue/rows/",
        "/browse/",
        "/entities/",
        "/audit/",
        "/policy/",
        "/overview/",
        *items,
    ]


INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.IGNORECASE)
INLINE_STYLE = re.compile(r"<style\b|\sstyle=|\son[a-z]+=|javascript:", re.IGNORECASE)


def test_every_dashboard_page_carries_the_policy_and_nothing_inline(demo: Demo) -> None:
    client = demo.client("rita")
    pages = [*_dashboard_pages(demo), "/accounts/login/"]

    for path in pages:
        response = (client if path != "/accounts/login/" else Client()).get(path)
        body = response.content.decode()
        assert response.status_code == 200, path
        assert response["Content-Security-Policy"] == SELF_ONLY_POLICY, path
        assert INLINE_SCRIPT.search(body) is None, path
        assert INLINE_STYLE.search(body) is None, path


def test_the_policy_allows_only_the_site_itself() -> None:
    assert "script-src 'self';" in SELF_ONLY_POLICY
    assert "style-src 'self';" in SELF_ONLY_POLICY
    assert "unsafe-inline" not in SELF_ONLY_POLICY
    assert "frame-ancestors 'none'" in SELF_ONLY_POLICY


SHOW_HSTS = "from config import settings as s; print(s.SECURE_HSTS_SECONDS)"


@pytest.mark.parametrize(
    ("site_url", "seconds"),
    [("https://memgov.example.com", "31536000"), ("http://127.0.0.1:8000", "0")],
)
def test_hsts_is_on_for_an_https_site_url_only(site_url: str, seconds: str) -> None:
    clean = {k: v for k, v in os.environ.items() if k not in ("SITE_URL", "SECURE_HSTS_SECONDS")}
    shown = subprocess.run(  # noqa: S603 - our own settings module, read in a fresh process
        [sys.executable, "-c", SHOW_HSTS],
        cwd=ROOT,
        env={**clean, "SECRET_KEY": "x", "SITE_URL": site_url},
        capture_output=True,
        text=True,
        check=False,
    )

    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.strip() == seconds


def test_an_https_request_gets_strict_transport_security(settings, demo: Demo) -> None:
    settings.SECURE_HSTS_SECONDS = 31536000

    response = Client().get("/accounts/login/", secure=True)

    assert response["Strict-Transport-Security"] == "max-age=31536000"
