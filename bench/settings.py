"""The servers the benchmarks start: production settings with ``bench.urls``, which adds
``/floor`` (never served in production)."""

from config.settings import *  # noqa: F403 - the production settings, unchanged

ROOT_URLCONF = "bench.urls"
