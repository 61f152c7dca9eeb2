from django.apps import AppConfig

from operations.queues import prepare_embedded_broker


class OperationsConfig(AppConfig):
    """What keeps the processes running and observable: liveness and readiness, the probe
    port, worker heartbeats, metrics, telemetry and logs, beat's schedule store, the queues
    and a local run's broker folders and mail files."""

    name = "operations"

    def ready(self) -> None:
        prepare_embedded_broker()
