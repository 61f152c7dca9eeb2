"""The Django admin (docs/api.md, Dashboard): read-mostly, every change through a service."""

from django.contrib import admin

import dashboard.admin.approvals
import dashboard.admin.audit
import dashboard.admin.memory
import dashboard.admin.webhooks  # noqa: F401 - importing the modules registers the admins

# The lists need the width at 1280 px (tests/browser/test_every_page.py); the index page
# and the breadcrumbs lead to every model all the same.
admin.site.enable_nav_sidebar = False
