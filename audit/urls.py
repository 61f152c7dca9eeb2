from django.urls import path

from audit import api

urlpatterns = [
    path("audit", api.AuditListView.as_view()),
    path("audit/verify", api.AuditVerifyView.as_view()),
]
