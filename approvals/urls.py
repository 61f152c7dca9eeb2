from django.urls import path

from approvals import api

urlpatterns = [
    path("memories/<str:memory_id>/approve", api.ApproveView.as_view()),
    path("memories/<str:memory_id>/reject", api.RejectView.as_view()),
    path("memories/<str:memory_id>/retire", api.RetireView.as_view()),
    path("memories/<str:memory_id>/recheck", api.RecheckView.as_view()),
    path("memories/<str:memory_id>/scenarios", api.ScenariosView.as_view()),
    path("memories/<str:memory_id>/checks", api.ChecksView.as_view()),
    path("memories/<str:memory_id>/link-subject", api.LinkSubjectView.as_view()),
    path("sources/<str:source_id>/revoke", api.SourceRevokeView.as_view()),
    path("sources/<str:source_id>/visibility", api.SourceVisibilityView.as_view()),
]
