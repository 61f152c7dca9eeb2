"""The API docs render from the server alone: every request to another host is aborted,
as on a machine without internet, and the pages still list the operations."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import WAIT_MS, screenshot

pytestmark = pytest.mark.browser


def _offline_page(chromium: Any, server: str) -> tuple[Any, Any, list[str], list[str]]:
    """A page whose requests anywhere but ``server`` fail, recording them and any console
    error (a CSP refusal shows there)."""
    context = chromium.new_context(viewport={"width": 1400, "height": 900})
    blocked: list[str] = []
    errors: list[str] = []

    def route(request_route: Any) -> None:
        url = request_route.request.url
        if url.startswith(server) or url.startswith(("data:", "blob:")):
            request_route.continue_()
        else:
            blocked.append(url)
            request_route.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return context, page, blocked, errors


def test_swagger_ui_lists_the_operations_with_no_internet(
    chromium: Any, live_server: Any, db: Any
) -> None:
    context, page, blocked, errors = _offline_page(chromium, live_server.url)
    try:
        page.goto(f"{live_server.url}/api/docs/")
        operations = page.locator(".opblock")
        expect(operations.first).to_be_visible(timeout=WAIT_MS)
        assert operations.count() > 20
        resolve = page.locator(".opblock-summary-path", has_text="/api/v1/resolve")
        expect(resolve.first).to_be_visible()
        screenshot(page, "api_docs")
        assert blocked == []
        assert errors == []
    finally:
        context.close()


def test_redoc_lists_the_operations_with_no_internet(
    chromium: Any, live_server: Any, db: Any
) -> None:
    context, page, blocked, errors = _offline_page(chromium, live_server.url)
    try:
        page.goto(f"{live_server.url}/api/redoc/")
        operations = page.locator("[data-section-id^='operation/']")
        expect(operations.first).to_be_attached(timeout=WAIT_MS)
        assert operations.count() > 20
        screenshot(page, "api_redoc")
        assert blocked == []
        # ReDoc's "powered by" badge names an image on its CDN; the CSP refuses it before
        # any request (so nothing was blocked above), and that refusal is the only error.
        badge = "Loading the image 'https://cdn.redoc.ly/"
        assert [e for e in errors if not e.startswith(badge)] == []
    finally:
        context.close()
