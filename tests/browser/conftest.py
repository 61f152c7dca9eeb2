"""Browser tests: Debian's Chromium driven by Playwright against ``live_server``, with a
real Celery worker thread running the scenario checks the reviewer watches.

Locally they are skipped when ``/usr/bin/chromium`` is absent; under ``CI=true`` a missing
Chromium fails them."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from celery.contrib.testing.worker import start_worker
from django.conf import settings
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import expect

from config.celery import app as celery_app
from operations.queues import prepare_embedded_broker
from tests.dashboard.support import Demo, load_demo

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = Path(settings.BASE_DIR) / "var" / "screenshots"  # the run's artifact (issue 15)
WAIT_MS = 20_000  # an upper bound for the page to show what it must; never a timing claim
# Assertions wait as long as actions: a worker starting on a loaded machine takes seconds.
expect.set_options(timeout=WAIT_MS)


# One browser a test module: Playwright's sync API keeps an event loop running in this
# thread while it is started, and tests of other modules in the same process call
# ``async_to_sync`` (the MCP sessions), which refuses to run beside a running loop.
@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    if not CHROMIUM.exists():
        message = f"Chromium is not installed at {CHROMIUM} (apt-get install -y chromium)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop in this thread; the test's own ORM calls
    # are still synchronous, so Django's async-safety guard must not refuse them.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    playwright = sync_playwright().start()
    browser = playwright.chromium.launch(
        executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
    )
    try:
        yield browser
    finally:
        browser.close()
        playwright.stop()
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture(autouse=True)
def _fast_passwords(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@dataclass
class Site:
    """The live server with the demo tenant loaded; tasks the browser triggers wait in the
    broker until a test starts the worker, so it can show a page before and after."""

    url: str
    demo: Demo
    browser: Any
    contexts: list[Any] = field(default_factory=list)

    def page(self, *, width: int = 1280, height: int = 900) -> Any:
        context = self.browser.new_context(viewport={"width": width, "height": height})
        self.contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        return page

    def sign_in(self, page: Any, name: str) -> None:
        page.goto(f"{self.url}/accounts/login/")
        page.get_by_label("Username").fill(name)
        page.get_by_label("Password").fill(f"{name}-demo-pass")
        page.get_by_role("button", name="Sign in").click()
        # A reviewer starts on the queue, someone who reviews nothing on "Your memories".
        page.wait_for_url(lambda url: url in (f"{self.url}/", f"{self.url}/mine/"))

    @contextmanager
    def worker(self) -> Iterator[None]:
        """A real Celery worker in a thread, consuming what the pages enqueued."""
        with start_worker(
            celery_app,
            pool="solo",
            perform_ping_check=False,
            loglevel="WARNING",
            shutdown_timeout=10,
        ):
            yield


def open_until_active(site: Site, page: Any, key: str) -> None:
    """The demo item ``key``'s page, opened again until it says active. Read through the
    page, not the database the worker is writing. The page reloads itself when its checks
    end (htmx's refresh): an opening of ours at that moment is aborted, and the page's own
    load is waited for instead."""
    url = f"{site.url}/memories/{site.demo.items[key]}/"
    for _ in range(WAIT_MS // 500):
        try:
            page.goto(url)
        except PlaywrightError as error:
            if "ERR_ABORTED" not in str(error):
                raise
            page.wait_for_load_state()
        if page.locator("main .badge", has_text="active").count():
            break
        page.wait_for_timeout(500)
    expect(page.locator("main .badge").first).to_have_text("active")


def screenshot(page: Any, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


@pytest.fixture
def site(chromium: Any, live_server: Any, transactional_db: Any, settings: Any) -> Iterator[Site]:
    """Demo data first (its tasks eager, in this thread), then tasks go to the broker."""
    settings.SITE_URL = live_server.url
    demo = load_demo(_already_committed)
    prepare_embedded_broker()
    celery_app.control.purge()
    celery_app.conf.task_always_eager = False
    site = Site(url=live_server.url, demo=demo, browser=chromium)
    try:
        yield site
    finally:
        # Closing the pages ends Chromium's keep-alive connections while the server (and
        # its shared in-memory SQLite connection) still serve them.
        for context in site.contexts:
            context.close()
        celery_app.conf.task_always_eager = True
        celery_app.control.purge()


@contextmanager
def _already_committed(execute: bool = True) -> Iterator[None]:
    """A transactional test commits for real: after-commit work ran when the block ends."""
    yield
