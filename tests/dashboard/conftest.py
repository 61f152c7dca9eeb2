"""Fixtures of the dashboard tests: the demo tenant and its reviewers."""

from __future__ import annotations

from typing import Any

import pytest

from tests.dashboard.support import Demo, load_demo


@pytest.fixture(autouse=True)
def _fast_passwords(settings: Any) -> None:
    """PBKDF2 would cost seconds of persona setup per test and prove nothing here."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def demo(db: Any, django_capture_on_commit_callbacks: Any) -> Demo:
    return load_demo(django_capture_on_commit_callbacks)
