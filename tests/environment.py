"""Loaded as a pytest plugin (``-p tests.environment``) before Django reads its settings:
test-run defaults that a real deployment must set itself."""

import os
from pathlib import Path

os.environ.setdefault("SECRET_KEY", "test-only-secret-key-not-for-production")
os.environ.setdefault(
    "MEMGOV_VAR_DIR", str(Path(__file__).resolve().parent.parent / "var" / "test")
)
