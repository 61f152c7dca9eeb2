"""Semantic retrieval is on for these stories (tests/environment.py turns it off for
the rest of the suite, whose processes would each load the model)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _semantic_on(semantic_on: None) -> None:
    """``tests.conftest.semantic_on`` for every test here."""
