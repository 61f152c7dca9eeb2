from django.apps import AppConfig


class AccountsConfig(AppConfig):
    """Tenants, people, memberships and grants, API keys, sign-in and request throttling,
    and their operator commands. Their models stay in ``core`` (docs/decisions/0023)."""

    name = "accounts"
    default_auto_field = "django.db.models.BigAutoField"
