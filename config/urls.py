from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path, re_path
from django.views.generic import RedirectView
from drf_spectacular.views import (
    SpectacularAPIView,
    SpectacularRedocView,
    SpectacularSwaggerSplitView,
)

import agent_interface.problems as problems
import operations.health as health
from accounts import sign_in

urlpatterns = [
    # First: agents' calls are most of the traffic, and Django tries patterns in order.
    path("api/v1/", include("api.urls")),
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # Both docs pages load their bundles from static files (drf-spectacular-sidecar), so
    # they render without internet; neither has an inline script (gateway/security.py).
    path(
        "api/docs/",
        SpectacularSwaggerSplitView.as_view(
            url_name="schema", template_name="api_docs/swagger_ui.html"
        ),
        name="api-docs",
    ),
    path(
        "api/redoc/",
        SpectacularRedocView.as_view(url_name="schema", template_name="api_docs/redoc.html"),
        name="api-redoc",
    ),
    # Browsers ask for /favicon.ico whatever the page says; answer instead of a 404.
    path("favicon.ico", RedirectView.as_view(url=static("favicon.svg"), permanent=True)),
    # Unknown API paths answer problem+json even under DEBUG (Django's debug 404 is HTML),
    # whatever the method (the view is CSRF-exempt); ``/api`` itself too, not a redirect.
    re_path(r"^api(?:/|$)", problems.api_not_found),
    path("admin/", admin.site.urls),
    path("accounts/login/", sign_in.ThrottledLoginView.as_view(), name="login"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include("dashboard.urls")),
]

# The admin's sign-in page says why a locked sign-in is refused (accounts/sign_in.py).
admin.site.login_form = sign_in.ThrottledAdminAuthenticationForm

handler400 = "agent_interface.problems.bad_request"
handler403 = "agent_interface.problems.permission_denied"
handler404 = "agent_interface.problems.page_not_found"
handler500 = "agent_interface.problems.server_error"
