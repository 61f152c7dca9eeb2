from django.urls import path

from memory import api, api_resolve

urlpatterns = [
    path("sources", api.SourceCollectionView.as_view()),
    path("sources/<str:source_id>", api.SourceDetailView.as_view()),
    path("entities", api.EntityCollectionView.as_view()),
    path("entities/match", api.EntityMatchView.as_view()),
    path("entities/<str:entity_id>", api.EntityDetailView.as_view()),
    path("entities/<str:entity_id>/aliases", api.EntityAliasView.as_view()),
    path("memories", api.MemoryCollectionView.as_view()),
    path("memories/<str:memory_id>", api.MemoryDetailView.as_view()),
    path("memories/<str:memory_id>/versions", api.MemoryVersionsView.as_view()),
    path("memories/<str:memory_id>/versions/<int:number>", api.MemoryVersionDetailView.as_view()),
    path("resolve", api_resolve.ResolveView.as_view()),
    path("tasks/<str:task_id>", api_resolve.TaskView.as_view()),
    path("policy", api_resolve.PolicyView.as_view()),
    path("policy/revalidate", api_resolve.RevalidateView.as_view()),
    path("revalidations/<str:job_id>", api_resolve.RevalidationView.as_view()),
]
