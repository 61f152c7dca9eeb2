"""Semantic retrieval is on for these stories (tests/environment.py turns it off for
the rest of the suite, whose processes would each load the model)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from memory import embeddings


@pytest.fixture(autouse=True)
def _semantic_on(settings: Any) -> Iterator[None]:
    settings.MEMGOV_SEMANTIC = True
    embeddings.configured.cache_clear()
    yield
    embeddings.configured.cache_clear()
