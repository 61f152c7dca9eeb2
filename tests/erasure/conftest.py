"""Fixtures of the erasure stories (issue 12): the review flow's, plus a privacy officer."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings
from django_redis import get_redis_connection

from tests.approvals.support import Flow
from tests.conftest import World
from tests.erasure.story import eraser


@pytest.fixture(autouse=True)
def _empty_cache_database() -> None:
    """Each story starts with an empty resolution cache: an earlier test's entries about
    its own (identical) story would otherwise be found by the Redis scan."""
    if settings.CACHE_URL:
        get_redis_connection("default").flushdb()


@pytest.fixture
def flow(world: World, django_capture_on_commit_callbacks: Any) -> Iterator[Flow]:
    flow = Flow(world=world, on_commit=django_capture_on_commit_callbacks)
    eraser(flow)
    yield flow
