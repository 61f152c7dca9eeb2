from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "api"

    def ready(self) -> None:
        # Imported here: registers the OpenAPI auth extension.
        import api.schema  # noqa: F401, PLC0415
