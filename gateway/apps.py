from django.apps import AppConfig


class GatewayConfig(AppConfig):
    """What every request passes through before a view: the input boundary, the tenant's
    share of the threads, the browser-only middleware, CSP and the proxy warning."""

    name = "gateway"
