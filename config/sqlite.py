"""SQLite that can load extensions, for sqlite-vec (docs/operations.md, Semantic retrieval).

Python's ``sqlite3`` is sometimes built without ``enable_load_extension`` (pyenv's and
some distributions' default). Where it is, and ``pysqlite3`` (the semantic extra's
``pysqlite3-binary``: the same module with its own SQLite) is installed, this process uses
that module under the name ``sqlite3``, which is how Django's SQLite backend imports it.
Called from settings, before any database connection exists."""

from __future__ import annotations

import importlib
import sqlite3
import sys


def loads_extensions(module: object) -> bool:
    return hasattr(getattr(module, "Connection", None), "enable_load_extension")


def sqlite_with_extensions() -> None:
    if loads_extensions(sqlite3):
        return
    try:
        replacement = importlib.import_module("pysqlite3")
        dbapi2 = importlib.import_module("pysqlite3.dbapi2")
    except ImportError:
        return  # semantic retrieval will say it is off (memory.semantic)
    if "django.db.backends.sqlite3.base" in sys.modules:
        return  # too late for this process: the backend holds the other module
    sys.modules["sqlite3"] = replacement
    sys.modules["sqlite3.dbapi2"] = dbapi2
