"""Fixtures of the review-and-activation stories (issue 4)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.approvals.support import Flow
from tests.conftest import World


@pytest.fixture(autouse=True)
def _fast_passwords(settings: Any) -> None:
    """PBKDF2 would cost two seconds of persona setup per test and prove nothing here."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def flow(world: World, django_capture_on_commit_callbacks: Any) -> Iterator[Flow]:
    yield Flow(world=world, on_commit=django_capture_on_commit_callbacks)
