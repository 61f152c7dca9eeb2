"""The REST API under /api/v1/ (docs/api.md): one view per operation, thin over services and
selectors."""

from django.urls import path

from api import audit, context, erasure, field_catalog, memory, resolve, review, webhooks
from api import discovery as agent_reads

urlpatterns = [
    # Django tries the patterns in order: the hottest path of all is matched first.
    path("resolve", resolve.ResolveView.as_view()),
    path("sources", memory.SourceCollectionView.as_view()),
    path("sources/<str:source_id>", memory.SourceDetailView.as_view()),
    path("entities", memory.EntityCollectionView.as_view()),
    path("entities/match", memory.EntityMatchView.as_view()),
    path("entities/kinds", agent_reads.EntityKindsView.as_view()),
    path("entities/by-ref", agent_reads.EntityByRefView.as_view()),
    path("entities/<str:entity_id>", memory.EntityDetailView.as_view()),
    path("entities/<str:entity_id>/aliases", memory.EntityAliasView.as_view()),
    path("entities/<str:entity_id>/facts", agent_reads.EntityFactsView.as_view()),
    path("entities/<str:entity_id>/export", erasure.ExportView.as_view()),
    path("entities/<str:entity_id>/erase", erasure.EraseView.as_view()),
    path("erasures/<str:erasure_id>", erasure.ErasureView.as_view()),
    path("search", agent_reads.SearchView.as_view()),
    path("proposals", agent_reads.ProposalsView.as_view()),
    path("memories", memory.MemoryCollectionView.as_view()),
    path("memories/<str:memory_id>", memory.MemoryDetailView.as_view()),
    path("memories/<str:memory_id>/versions", memory.MemoryVersionsView.as_view()),
    path(
        "memories/<str:memory_id>/versions/<int:number>", memory.MemoryVersionDetailView.as_view()
    ),
    path("tasks/<str:task_id>", resolve.TaskView.as_view()),
    path("policy", resolve.PolicyView.as_view()),
    path("policy/revalidate", resolve.RevalidateView.as_view()),
    path("revalidations/<str:job_id>", resolve.RevalidationView.as_view()),
    path("memories/<str:memory_id>/approve", review.ApproveView.as_view()),
    path("memories/<str:memory_id>/reject", review.RejectView.as_view()),
    path("memories/<str:memory_id>/retire", review.RetireView.as_view()),
    path("memories/<str:memory_id>/recheck", review.RecheckView.as_view()),
    path("memories/<str:memory_id>/scenarios", review.ScenariosView.as_view()),
    path(
        "memories/<str:memory_id>/scenarios/<int:scenario_id>/remove",
        review.ScenarioRemoveView.as_view(),
    ),
    path("memories/<str:memory_id>/checks", review.ChecksView.as_view()),
    path("memories/<str:memory_id>/link-subject", review.LinkSubjectView.as_view()),
    path("sources/<str:source_id>/revoke", review.SourceRevokeView.as_view()),
    path("sources/<str:source_id>/visibility", review.SourceVisibilityView.as_view()),
    path("context", context.ContextView.as_view()),
    path("memories/<str:memory_id>/clarify", context.ClarifyView.as_view()),
    path("fields", field_catalog.FieldCollectionView.as_view()),
    path("fields/<str:name>", field_catalog.FieldDetailView.as_view()),
    path("audit", audit.AuditListView.as_view()),
    path("audit/verify", audit.AuditVerifyView.as_view()),
    path("webhooks", webhooks.WebhookCollectionView.as_view()),
    path("webhooks/<str:webhook_id>", webhooks.WebhookDetailView.as_view()),
    path("webhooks/<str:webhook_id>/rotate-secret", webhooks.WebhookRotateSecretView.as_view()),
    path("webhooks/<str:webhook_id>/enable", webhooks.WebhookEnableView.as_view()),
    path("webhooks/<str:webhook_id>/deliveries", webhooks.WebhookDeliveriesView.as_view()),
]
