"""The dashboard's own rows: only what a person chose for their pages, never domain data."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from core.models import Tenant


class SavedView(models.Model):
    """A page's filter and sort as a query string, remembered per person and tenant, so
    the queue opens the way its reviewer left it (issue 37, point 6)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    page = models.CharField(max_length=40)
    query = models.CharField(max_length=500, blank=True)
    saved_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "user", "page"], name="saved_view_unique")
        ]

    def __str__(self) -> str:
        return f"{self.page}?{self.query}"
