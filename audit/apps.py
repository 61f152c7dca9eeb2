from django.apps import AppConfig

from audit.keys import keyring


class AuditConfig(AppConfig):
    name = "audit"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # A malformed MEMGOV_AUDIT_KEYS stops the process at start (conventions, rule 17),
        # not the first write that needs a key.
        keyring()
