from django.apps import AppConfig
from django.db.models.signals import post_delete, post_save


class MemoryConfig(AppConfig):
    name = "memory"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from core.models import ApiKey  # noqa: PLC0415 - models are loaded by now
        from memory import keys  # noqa: PLC0415

        # Any save of a key's row (a service, the admin, a shell) tells the processes that
        # remember the key: resolve's hot path takes remembered keys on trust of this.
        post_save.connect(keys.key_row_changed, sender=ApiKey, dispatch_uid="memory.key_saved")
        post_delete.connect(keys.key_row_changed, sender=ApiKey, dispatch_uid="memory.key_gone")
