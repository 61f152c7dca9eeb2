"""The Django admin (docs/api.md, Dashboard): read-mostly, every change through a service."""

import dashboard.admin.approvals
import dashboard.admin.audit
import dashboard.admin.memory  # noqa: F401 - importing the modules registers the admins
