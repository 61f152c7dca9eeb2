"""The reviewer dashboard at the site root (docs/api.md, Dashboard)."""

from django.urls import path

from dashboard import (
    audit_log,
    browse,
    clarify,
    entities,
    fields,
    item,
    overview,
    owner,
    policy,
    queue,
    subjects,
    webhooks,
)

app_name = "dashboard"

urlpatterns = [
    path("", queue.queue_page, name="queue"),
    path("queue/rows/", queue.queue_rows, name="queue-rows"),
    path("queue/approve/", queue.queue_approve, name="queue-approve"),
    path("queue/view/", queue.queue_save_view, name="queue-view"),
    path("mine/", owner.owner_page, name="owner"),
    path("memories/<str:memory_id>/", item.item_page, name="item"),
    path("memories/<str:memory_id>/live/", item.item_live, name="item-live"),
    path("memories/<str:memory_id>/approve/", item.approve, name="approve"),
    path("memories/<str:memory_id>/reject/", item.reject, name="reject"),
    path("memories/<str:memory_id>/retire/", item.retire, name="retire"),
    path("memories/<str:memory_id>/recheck/", item.recheck, name="recheck"),
    path("memories/<str:memory_id>/replace/", item.replace, name="replace"),
    path("memories/<str:memory_id>/correct/", item.correct, name="correct"),
    path("memories/<str:memory_id>/scenarios/", item.add_scenario, name="add-scenario"),
    path(
        "memories/<str:memory_id>/scenarios/<int:scenario_id>/remove/",
        item.remove_scenario,
        name="remove-scenario",
    ),
    path("memories/<str:memory_id>/clarify/", clarify.clarify, name="clarify"),
    path("memories/<str:memory_id>/link/", entities.link_subject, name="link-subject"),
    path("memories/<str:memory_id>/subject/", item.link_subject, name="subject-link"),
    path("memories/<str:memory_id>/subject/new/", item.create_subject, name="subject-create"),
    path("sources/<str:source_id>/revoke/", item.revoke_source, name="revoke-source"),
    path("browse/", browse.browse_page, name="browse"),
    path("entities/", entities.entities_page, name="entities"),
    path("entities/<str:entity_id>/", subjects.subject_page, name="subject"),
    path("entities/<str:entity_id>/export/", subjects.subject_export, name="subject-export"),
    path("entities/<str:entity_id>/erase/", subjects.subject_erase, name="subject-erase"),
    path("erasures/<str:erasure_id>/", subjects.erasure_progress, name="erasure-progress"),
    path("audit/", audit_log.audit_page, name="audit"),
    path("audit/verify/", audit_log.audit_verify_view, name="audit-verify"),
    path("fields/", fields.fields_page, name="fields"),
    path("fields/save/", fields.field_save, name="field-save"),
    path("policy/", policy.policy_page, name="policy"),
    path("policy/publish/", policy.publish, name="policy-publish"),
    path("policy/dry-run/", policy.dry_run, name="policy-dry-run"),
    path("policy/revalidate/", policy.revalidate, name="policy-revalidate"),
    path(
        "policy/revalidations/<str:job_id>/",
        policy.revalidation_progress,
        name="revalidation-progress",
    ),
    path("overview/", overview.overview_page, name="overview"),
    path("webhooks/", webhooks.webhooks_page, name="webhooks"),
    path(
        "webhooks/<str:webhook_id>/enable/",
        webhooks.webhook_enable_view,
        name="webhook-enable",
    ),
]
