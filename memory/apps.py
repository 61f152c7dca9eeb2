from typing import Any

from django.apps import AppConfig
from django.db import connections
from django.db.backends.signals import connection_created
from django.db.models.signals import post_migrate

from memory import fulltext, vectors
from memory.search_terms import fold, with_identifiers


def _keep_fulltext(sender: Any, using: str = "default", **_kwargs: Any) -> None:
    """SQLite loses FTS5 triggers when Django rebuilds a table: put them back after each
    migrate (memory.fulltext)."""
    connection = connections[using]
    if connection.vendor == "sqlite":
        fulltext.ensure_sqlite(connection)


def _keep_vector_store(sender: Any, using: str = "default", **_kwargs: Any) -> None:
    """The vector column, once the database can hold it (pgvector installed after the
    first migrate: ``migrate`` again adds it; memory.vectors)."""
    vectors.ensure_store(connections[using])


def _vectors_on_sqlite(sender: Any, connection: Any, **_kwargs: Any) -> None:
    if connection.vendor == "sqlite":
        connection.memgov_sqlite_vec = vectors.load_sqlite_vec(connection.connection)


def _fold_on_sqlite(sender: Any, connection: Any, **_kwargs: Any) -> None:
    """SQLite has no ``unaccent``: name matching folds with the Python function that
    PostgreSQL's ``memgov_fold`` mirrors (memory.selectors.Folded); the FTS5 triggers add
    identifiers' parts with the one ``memgov_identifiers`` mirrors (memory.fulltext)."""
    if connection.vendor == "sqlite":
        connection.connection.create_function(
            fulltext.FOLD, 1, lambda text: None if text is None else fold(text), deterministic=True
        )
        connection.connection.create_function(
            fulltext.IDENTIFIERS,
            1,
            lambda text: None if text is None else with_identifiers(str(text)),
            deterministic=True,
        )


class MemoryConfig(AppConfig):
    name = "memory"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        post_migrate.connect(_keep_fulltext, sender=self, dispatch_uid="memory.fulltext")
        connection_created.connect(_fold_on_sqlite, dispatch_uid="memory.fold")
        post_migrate.connect(_keep_vector_store, sender=self, dispatch_uid="memory.vectors")
        connection_created.connect(_vectors_on_sqlite, dispatch_uid="memory.sqlite_vec")
        # A new tenant starts with its first policy (accounts cannot import us). Imported
        # here: both modules use models, which are loaded only now.
        from accounts.tenancy import tenant_starter  # noqa: PLC0415
        from memory.policy import policy_first  # noqa: PLC0415

        tenant_starter(policy_first)
