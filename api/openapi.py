"""Typed response bodies for the OpenAPI description (documentation only: the views build
their answers with the ``*_representation`` functions, and tests/openapi_check.py checks
every real answer of the test suite against these)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample
from rest_framework import serializers

from approvals.models import Approval, CheckResult, Revalidation
from core.kinds import MemoryKind
from memory.models import Assertion, Scenario, Source, Status, Verification
from memory.selectors import MATCH_KINDS

_Base = serializers.Serializer[Any]


def _time(**kwargs: Any) -> serializers.DateTimeField:
    return serializers.DateTimeField(**kwargs)


class ApprovalOut(_Base):
    reviewer = serializers.CharField()
    decision = serializers.ChoiceField(Approval.Decision.values)
    comment = serializers.CharField(allow_blank=True)
    at = _time()


class ChecksSummaryOut(_Base):
    status = serializers.ChoiceField(["none", "running", "passed", "failed"])
    passed = serializers.IntegerField(min_value=0)
    failed = serializers.IntegerField(min_value=0)
    total = serializers.IntegerField(min_value=0)
    run = serializers.ChoiceField(
        CheckResult.Run.values,
        allow_null=True,
        help_text="The run the counts are from (null before any run).",
    )
    ran_at = _time(allow_null=True, help_text="When that run ran (null before any run).")


class ClarificationOptionOut(_Base):
    id = serializers.CharField(help_text="An entity id (subject) or opt_<n> (value).")
    label = serializers.CharField()  # type: ignore[assignment]  # a member, not Field.label
    matched_on = serializers.CharField(required=False)
    value = serializers.JSONField(required=False)
    memory_id = serializers.CharField(required=False, allow_null=True)


class ClarificationOut(_Base):
    member = serializers.ChoiceField(["subject", "value"])
    mention = serializers.CharField()
    question = serializers.CharField()
    options = ClarificationOptionOut(many=True)
    asked_at = _time()
    remaining = serializers.IntegerField(min_value=0)
    answer_with = serializers.CharField()


class MemoryOut(_Base):
    id = serializers.CharField()
    version = serializers.IntegerField(min_value=1)
    active_version = serializers.IntegerField(allow_null=True)
    kind = serializers.ChoiceField(MemoryKind.values)
    subject = serializers.CharField(allow_null=True)
    subject_mention = serializers.CharField(allow_null=True)
    field = serializers.CharField()
    value = serializers.JSONField()
    statement = serializers.CharField()
    scope = serializers.DictField(child=serializers.CharField())
    owner = serializers.CharField()
    proposed_by = serializers.CharField()
    expires_at = _time(allow_null=True)
    valid_from = _time(allow_null=True)
    valid_to = _time(allow_null=True)
    assertion = serializers.ChoiceField(Assertion.values)
    verification = serializers.ChoiceField(Verification.values)
    status = serializers.ChoiceField(Status.values)
    status_reason = serializers.CharField(allow_null=True, required=False)
    sources = serializers.ListField(child=serializers.CharField())
    basis = serializers.DictField()
    visibility = serializers.ListField(child=serializers.CharField())
    required_reviewers = serializers.ListField(child=serializers.CharField())
    recorded_at = _time()
    activated_at = _time(allow_null=True)
    deactivated_at = _time(allow_null=True)
    approvals = ApprovalOut(many=True)
    approvals_required = serializers.IntegerField(min_value=0)
    checks = ChecksSummaryOut()
    needs_clarification = ClarificationOut(allow_null=True, required=False)


class MemoryPageOut(_Base):
    results = MemoryOut(many=True)
    next = serializers.URLField(allow_null=True)


class SourceOut(_Base):
    id = serializers.CharField()
    kind = serializers.ChoiceField(Source.Kind.values)
    # null once purged by retention or erasure (the sha256 stays).
    content = serializers.CharField(allow_blank=True, allow_null=True)
    content_sha256 = serializers.CharField()
    external_ref = serializers.CharField(allow_null=True)
    version = serializers.CharField(allow_null=True)
    speaker = serializers.CharField(allow_null=True)
    occurred_at = _time(allow_null=True)
    received_at = _time()
    visibility = serializers.ListField(child=serializers.CharField())
    metadata = serializers.DictField()
    revoked_at = _time(allow_null=True)


class EntityOut(_Base):
    id = serializers.CharField()
    kind = serializers.CharField()
    name = serializers.CharField()
    aliases = serializers.ListField(child=serializers.CharField())
    external_ref = serializers.CharField(allow_null=True)
    created_at = _time()


class EntityPageOut(_Base):
    results = EntityOut(many=True)
    next = serializers.URLField(allow_null=True)


class ImpactOut(_Base):
    """What activation changes in one context, by id (docs/api.md: checks listing)."""

    context = serializers.DictField(  # type: ignore[assignment]  # declared fields leave the class
        child=serializers.CharField()
    )
    before = serializers.CharField(help_text="memory_id vN (why it wins), or abstains: reason")
    after = serializers.CharField(help_text="the same, with the version active")
    outranked = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="memory_id vN that answered before and are outranked after",
    )


class CheckOut(_Base):
    scenario = serializers.DictField()
    generated = serializers.BooleanField()
    run = serializers.CharField()
    outcome = serializers.ChoiceField(CheckResult.Outcome.values)
    detail = serializers.CharField(allow_blank=True)
    impact = ImpactOut(many=True)
    policy_version = serializers.CharField()
    ran_at = _time()
    version = serializers.IntegerField(min_value=1)


class RetiredOut(_Base):
    memory = MemoryOut()
    flagged_tasks = serializers.ListField(child=serializers.CharField())


class AuthoritativeSystemOut(_Base):
    name = serializers.CharField()
    url = serializers.CharField(allow_null=True)
    tool = serializers.CharField(allow_null=True)


class FieldOut(_Base):
    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    value_schema = serializers.DictField()
    kinds = serializers.ListField(child=serializers.ChoiceField(MemoryKind.values))
    required_scope = serializers.ListField(child=serializers.CharField())
    default_expiry_days = serializers.IntegerField(allow_null=True, min_value=1)
    authoritative_system = AuthoritativeSystemOut(allow_null=True)
    updated_by = serializers.CharField()
    updated_at = _time()


class FieldListOut(_Base):
    results = FieldOut(many=True)


class FactOut(_Base):
    field = serializers.CharField()
    value = serializers.JSONField()
    memory_id = serializers.CharField()
    version = serializers.IntegerField(min_value=1)
    kind = serializers.CharField()
    scope = serializers.DictField(child=serializers.CharField())
    verification = serializers.CharField()
    valid_from = _time(allow_null=True)
    valid_to = _time(allow_null=True)
    expires_at = _time(allow_null=True)
    sources = serializers.ListField(child=serializers.CharField())
    basis = serializers.DictField()
    statement = serializers.CharField()
    pending_correction = serializers.BooleanField()
    qualifiers = serializers.ListField(child=serializers.CharField())
    reason = serializers.CharField()
    # Only on a fact of a field whose committed state another system holds.
    advisory = serializers.BooleanField(required=False)
    authoritative_system = AuthoritativeSystemOut(required=False)


class AbstentionOut(_Base):
    field = serializers.CharField()
    reason = serializers.CharField()
    detail = serializers.CharField(allow_blank=True)


class PlanOut(_Base):
    field = serializers.CharField()
    value = serializers.JSONField()
    memory_id = serializers.CharField()
    version = serializers.IntegerField(min_value=1)
    valid_from = _time(allow_null=True)
    statement = serializers.CharField()


class ConsideredOut(_Base):
    memory_id = serializers.CharField()
    version = serializers.IntegerField(min_value=1)
    field = serializers.CharField()
    outcome = serializers.CharField()


class ResolutionOut(_Base):
    policy_version = serializers.CharField()
    valid_at = _time()
    known_at = _time()
    retrieval_id = serializers.CharField(allow_null=True)
    facts = FactOut(many=True)
    abstentions = AbstentionOut(many=True)
    plans = PlanOut(many=True)
    considered = ConsideredOut(many=True, required=False)


class PolicyOut(_Base):
    version = serializers.CharField()
    precedence = serializers.DictField()
    published_at = _time()
    published_by = serializers.CharField()
    reason = serializers.CharField(allow_blank=True)
    revalidation_failure = serializers.ChoiceField(["suspend", "flag"], required=False)


class MatchCandidateOut(_Base):
    id = serializers.CharField()
    kind = serializers.CharField()
    name = serializers.CharField()
    matched_on = serializers.ChoiceField(
        list(MATCH_KINDS),
        help_text="name/alias: equal to it; *_token: has every word of the mention as a "
        "whole word; alias_prefix: an alias starts with the mention; transliteration: the "
        "mention in Latin letters is its name or alias; semantic: near in meaning",
    )


class MatchOut(_Base):
    decision = serializers.ChoiceField(["none", "matched", "ambiguous"])
    candidates = MatchCandidateOut(many=True)


class PublishedPolicyOut(PolicyOut):
    revalidation = serializers.CharField()


class RevalidationStartedOut(_Base):
    revalidation = serializers.CharField()


class ErasureStartedOut(_Base):
    erasure = serializers.CharField()


class KeptSourceOut(_Base):
    # DRF's metaclass moves declared fields off the class, so "source" shadows nothing.
    source = serializers.CharField()  # type: ignore[assignment]
    also_cited_for = serializers.ListField(child=serializers.CharField())


class ErasureOut(_Base):
    id = serializers.CharField()
    subject = serializers.CharField()
    status = serializers.ChoiceField(["running", "done", "failed"])
    phase = serializers.CharField()
    counts = serializers.DictField(child=serializers.IntegerField(min_value=0))
    kept = KeptSourceOut(many=True)
    requested_by = serializers.CharField()
    started_at = _time()
    finished_at = _time(allow_null=True)
    error = serializers.CharField(allow_blank=True)


class ExportEntityOut(_Base):
    id = serializers.CharField()
    kind = serializers.CharField()
    name = serializers.CharField()
    external_ref = serializers.CharField(allow_null=True)
    created_at = _time()
    erased_at = _time(allow_null=True)


class ExportOut(_Base):
    """Everything held about a subject (streamed; see memory/export.py for each row)."""

    entity = ExportEntityOut()
    aliases = serializers.ListField(child=serializers.DictField())
    versions = serializers.ListField(child=serializers.DictField())
    sources = SourceOut(many=True)
    retrievals = serializers.ListField(child=serializers.DictField())
    audit_events = serializers.ListField(child=serializers.DictField())


class ScenarioRemovedOut(_Base):
    by = serializers.CharField()
    reason = serializers.CharField()
    at = _time()


class ScenarioOut(_Base):
    """A reviewer's or proposer's own scenario, as stored (checked at the next gate run)."""

    id = serializers.IntegerField()
    kind = serializers.ChoiceField(Scenario.Kind.values)
    context = serializers.DictField(child=serializers.CharField())  # type: ignore[assignment]  # declared fields leave the class
    valid_at = _time(allow_null=True)
    expect = serializers.ChoiceField(Scenario.Expect.values)
    created_by = serializers.CharField()
    version = serializers.IntegerField(
        min_value=1, required=False, help_text="The version it was written for."
    )
    removed = ScenarioRemovedOut(
        allow_null=True,
        required=False,
        help_text="Who removed it before activation, why and when; null while in force.",
    )


class ScenarioListOut(_Base):
    results = ScenarioOut(many=True)


class RevalidationOut(_Base):
    """``flagged`` only for a principal who may see which items were flagged."""

    id = serializers.CharField()
    status = serializers.ChoiceField(Revalidation.Status.values)
    total = serializers.IntegerField(min_value=0)
    done = serializers.IntegerField(min_value=0)
    failed = serializers.IntegerField(min_value=0)
    reason = serializers.CharField(allow_blank=True)
    policy_version = serializers.CharField()
    started_at = _time()
    finished_at = _time(allow_null=True)
    flagged = serializers.ListField(child=serializers.CharField(), required=False)


class TaskUseOut(_Base):
    memory_id = serializers.CharField()
    version = serializers.IntegerField(min_value=1)
    field = serializers.CharField()
    retrieved_at = _time()
    retrieval_id = serializers.CharField()
    status_now = serializers.ChoiceField(Status.values)


class TaskReasonOut(_Base):
    memory_id = serializers.CharField()
    version = serializers.IntegerField(min_value=1)
    # "suspended": a re-validation under the new policy failed (approvals.revalidation).
    event = serializers.ChoiceField(["retired", "expired", "superseded", "suspended"])
    at = _time()
    reason = serializers.CharField(allow_blank=True)


class TaskOut(_Base):
    task_id = serializers.CharField()
    used = TaskUseOut(many=True)
    needs_reverification = serializers.BooleanField()
    reasons = TaskReasonOut(many=True)


class ContextSubjectOut(_Base):
    given = serializers.CharField()
    id = serializers.CharField(allow_null=True)
    name = serializers.CharField(allow_null=True)
    decision = serializers.ChoiceField(["id", "matched", "ambiguous", "none"])


class ContextFactOut(FactOut):
    subject = serializers.CharField()
    subject_name = serializers.CharField()
    committed = serializers.BooleanField(required=False)


class ContextAskOut(_Base):
    subject = serializers.CharField(allow_null=True)
    mention = serializers.CharField(required=False)
    field = serializers.CharField(allow_null=True)
    reason = serializers.CharField()
    detail = serializers.CharField(required=False, allow_blank=True)
    ask = serializers.CharField()
    options = serializers.ListField(child=serializers.DictField(), required=False)


class ContextPendingOut(_Base):
    subject = serializers.CharField()
    field = serializers.CharField()
    memory_id = serializers.CharField()
    version = serializers.IntegerField(min_value=1)
    status = serializers.ChoiceField(Status.values)
    statement = serializers.CharField()
    effect = serializers.ChoiceField(["may_replace", "may_answer"])
    replaces = serializers.CharField(allow_null=True)


class ContextPlanOut(PlanOut):
    subject = serializers.CharField()


class ContextCutOut(_Base):
    section = serializers.ChoiceField(["ask", "advisory", "facts", "pending", "plans", "note"])
    subject = serializers.CharField(allow_null=True)
    field = serializers.CharField(allow_null=True)
    memory_id = serializers.CharField(allow_null=True)
    tokens = serializers.IntegerField(min_value=1)


class ContextTokensOut(_Base):
    budget = serializers.IntegerField()
    used = serializers.IntegerField()
    encoding = serializers.ChoiceField(["cl100k_base", "o200k_base"])
    estimator = serializers.CharField()


class ContextOut(_Base):
    purpose = serializers.ChoiceField(["answer", "action"])
    context = serializers.DictField(  # type: ignore[assignment]  # a member, not Field.context
        child=serializers.CharField()
    )
    policy_version = serializers.CharField()
    retrieval_id = serializers.CharField(allow_null=True)
    subjects = ContextSubjectOut(many=True)
    ask = ContextAskOut(many=True)
    advisory = ContextFactOut(many=True)
    facts = ContextFactOut(many=True)
    pending = ContextPendingOut(many=True)
    plans = ContextPlanOut(many=True)
    cut = ContextCutOut(many=True)
    tokens = ContextTokensOut()
    text = serializers.CharField()


# --- Request examples: the seeds' stories (shown in the docs, sent by Schemathesis) ----


def _example(name: str, summary: str, value: dict[str, Any]) -> OpenApiExample:
    return OpenApiExample(name, summary=summary, value=value, request_only=True)


_DANA, _NORTHWIND, _SARAH = (
    "ent_01j9dana0000000000000000",
    "ent_01j9northwind000000000000",
    "ent_01j9sarah00000000000000000",
)
_ORDER_A, _APR_2291 = "src_01j9ordera0000000000000000", "src_01j9apr22910000000000000"

REQUEST_EXAMPLES: dict[str, list[OpenApiExample]] = {
    "source_record": [
        _example(
            "order-record",
            "Seed 002: the order record that sends order-a to the office",
            {"kind": "business_record",
             "content": "Order order-a: customer asked to deliver to the office, 4 Dock Road.",
             "external_ref": "ORD-A", "version": "2"},
        ),
        _example(
            "approval-record",
            "Seed 001: the approved exception, visible to staff only",
            {"kind": "approval_record",
             "content": "APR-2291 v3: renewal of project P-9 with supplier S-17, batch B-3, "
                        "follows the historical-renewal exception process.",
             "external_ref": "APR-2291", "version": "3", "visibility": ["staff"]},
        ),
        _example(
            "message",
            "Seed 000: what Sarah said, and when",
            {"kind": "message", "content": "I moved to Pune in March.", "speaker": "Sarah Lee",
             "occurred_at": "2026-06-10T00:00:00Z"},
        ),
    ],
    "entity_create": [
        _example("customer", "Seed 002: the customer",
                 {"kind": "customer", "name": "Dana Kim", "aliases": ["D. Kim"]}),
        _example("supplier", "Seed 001: the supplier, with its own reference",
                 {"kind": "supplier", "name": "Northwind Metals", "external_ref": "S-17"}),
    ],
    "entity_alias_add": [
        _example("alias", "Seed 000: Sarah, as she signs", {"alias": "Sarah", "source": None}),
    ],
    "entity_match": [
        _example("match", "Seed 002: who is 'D. Kim'?", {"name": "D. Kim", "kind": "customer"}),
    ],
    "memory_propose": [
        _example(
            "preference",
            "Seed 002: Dana normally wants deliveries at home (no expiry, owned by sam)",
            {"kind": "preference", "subject": _DANA, "field": "delivery_address",
             "value": "12 Elm Street", "statement": "Dana normally wants deliveries at home.",
             "scope": {}, "owner": "sam", "expires_at": None,
             "sources": ["src_01j9chat000000000000000000"]},
        ),
        _example(
            "task-fact",
            "Seed 002: order-a goes to the office, on the order record's word",
            {"kind": "task_fact", "subject": _DANA, "field": "delivery_address",
             "value": "4 Dock Road", "statement": "Order order-a goes to Dana's office.",
             "scope": {"task": "order-a"}, "owner": "sam", "expires_at": "2027-01-15T00:00:00Z",
             "sources": [_ORDER_A], "basis": {"ref": "ORD-A", "version": "2"}},
        ),
        _example(
            "enterprise-rule",
            "Seed 001: an exception for one project, supplier and batch, not a company rule",
            {"kind": "enterprise_rule", "subject": _NORTHWIND, "field": "material_checks",
             "value": "follow exception APR-2291",
             "statement": "Renewals of project P-9 with S-17, batch B-3, follow exception "
                          "APR-2291.",
             "scope": {"project": "P-9", "supplier": "S-17", "batch": "B-3"}, "owner": "rita",
             "expires_at": "2027-03-01T00:00:00Z", "sources": [_APR_2291],
             "basis": {"ref": "APR-2291", "version": "3"}, "visibility": ["staff"],
             "scenarios": [{"kind": "inapplicable", "context": {"project": "P-10"},
                            "expect": "does_not_apply"}]},
        ),
        _example(
            "valid-from",
            "Seed 000: Sarah moved to Pune in March (said in June)",
            {"kind": "preference", "subject": _SARAH, "field": "home_city", "value": "Pune",
             "statement": "Sarah moved to Pune in March.", "scope": {}, "owner": "sam",
             "expires_at": None, "valid_from": "2026-03-01T00:00:00Z",
             "sources": ["src_01j9pune000000000000000000"]},
        ),
        _example(
            "unresolved-subject",
            "Seed 000: a subject named, not yet resolved to an entity",
            {"kind": "preference", "subject_mention": "Sarah", "field": "employer",
             "value": "Nova", "statement": "Sarah is joining Nova next month.", "scope": {},
             "owner": "sam", "expires_at": None, "assertion": "plan",
             "sources": ["src_01j9nova000000000000000000"]},
        ),
    ],
    "memory_correct": [
        _example(
            "new-address",
            "Seed 002: the office moved; the old value stays active until this one is",
            {"value": "7 Harbour Lane",
             "statement": "Order order-a goes to Dana's new office, 7 Harbour Lane.",
             "sources": [_ORDER_A]},
        ),
    ],
    "memory_approve": [
        _example("approve", "Seed 001: checked against the approval record",
                 {"comment": "Matches APR-2291 v3 for P-9 / S-17 / B-3."}),
    ],
    "memory_reject": [
        _example("reject", "Seed 001: a one-off correction is not a company rule",
                 {"reason": "This is an exception for P-9 only, not a tenant-wide rule."}),
    ],
    "memory_retire": [
        _example("retire", "Seed 002: the customer withdrew the instruction",
                 {"reason": "Dana asked us to stop using the office address.",
                  "in_flight": "reverify"}),
    ],
    "memory_scenario_add": [
        _example("out-of-scope", "Seed 001: another batch must not be exempt",
                 {"kind": "inapplicable", "context": {"project": "P-9", "supplier": "S-17",
                                                      "batch": "B-4"},
                  "expect": "does_not_apply"}),
    ],
    "memory_scenario_remove": [
        _example("wrong-scenario", "Issue 43: a scenario that misread the case",
                 {"reason": "B-4 is covered by the same exception; the scenario was wrong."}),
    ],
    "memory_link_subject": [
        _example("link", "Seed 000: 'Sarah' is Sarah Lee", {"subject": _SARAH}),
    ],
    "source_revoke": [
        _example("revoke", "Seed 001: the approval was withdrawn",
                 {"reason": "APR-2291 was withdrawn by procurement."}),
    ],
    "source_visibility_change": [
        _example("narrow", "Seed 001: only finance may see the approval now",
                 {"visibility": ["finance"], "reason": "Contains contract prices."}),
    ],
    "resolve": [
        _example("order-a", "Seed 002: where does order-a go? (records the retrieval)",
                 {"subject": _DANA, "fields": ["delivery_address"],
                  "context": {"task": "order-a"}, "task_id": "order-a-checkout",
                  "explain": True}),
        _example("as-of-april", "Seed 000: where did Sarah live in April?",
                 {"subject": _SARAH, "fields": ["home_city"], "context": {},
                  "valid_at": "2026-04-15T00:00:00Z"}),
    ],
    "webhook_create": [
        _example("retirements", "Seed 002: the checkout agent hears when an address is retired",
                 {"url": "https://agents.example.com/memgov",
                  "events": ["memory.retired", "task.needs_reverification"],
                  "description": "checkout agent"}),
    ],
    "webhook_rotate_secret": [
        _example("overlap-an-hour", "Receivers switch within the hour",
                 {"previous_valid_for_seconds": 3600}),
    ],
    "entity_erase": [
        _example("erasure-request", "Seed 000: Sarah asked us to forget what we hold about her",
                 {"reason": "Erasure request ER-114, verified by the privacy office."}),
    ],
    "policy_publish": [
        _example("verification-first",
                 "At equal specificity, a verified record outranks an asserted fact",
                 {"precedence": {"order": ["specificity", "verification", "kind", "valid_from"],
                                 "kind_rank": ["task_fact", "enterprise_rule", "preference"]},
                  "reason": "Audit finding: records beat what was merely said."}),
    ],
    "policy_revalidate": [
        _example("model-changed", "Re-check every active item",
                 {"reason": "The extraction model changed."}),
    ],
}  # fmt: skip


class WebhookOut(_Base):
    id = serializers.CharField()
    url = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    events = serializers.ListField(child=serializers.CharField())
    status = serializers.ChoiceField(["active", "disabled"])
    disabled_at = _time(allow_null=True)
    disabled_reason = serializers.CharField(allow_blank=True)
    created_by = serializers.CharField()
    created_at = _time()
    previous_secret_valid_until = _time(allow_null=True)


class WebhookWithSecretOut(WebhookOut):
    secret = serializers.CharField(help_text="whsec_ + base64; shown only in this answer.")


class WebhookEnabledOut(WebhookOut):
    held_released = serializers.IntegerField(
        min_value=0, help_text="Events held while disabled, now sent, oldest first."
    )
    held_dropped = serializers.IntegerField(
        min_value=0,
        help_text="Events held longer than MEMGOV_WEBHOOK_HELD_RETENTION_SECONDS: never sent.",
    )


class WebhookPageOut(_Base):
    results = WebhookOut(many=True)
    next = serializers.URLField(allow_null=True)


class WebhookAttemptOut(_Base):
    attempt = serializers.IntegerField(min_value=1)
    at = _time()
    status_code = serializers.IntegerField(allow_null=True)
    latency_ms = serializers.IntegerField(min_value=0)
    error = serializers.CharField(allow_blank=True)


class WebhookDeliveryOut(_Base):
    id = serializers.CharField()
    event_id = serializers.CharField(help_text="Sent as webhook-id on every attempt.")
    event_type = serializers.CharField()
    status = serializers.ChoiceField(
        ["pending", "delivered", "failed", "held"],
        help_text="held: recorded while the endpoint was disabled; sent when re-enabled.",
    )
    attempts = serializers.IntegerField(min_value=0)
    created_at = _time()
    next_attempt_at = _time(allow_null=True)
    delivered_at = _time(allow_null=True)
    last_status_code = serializers.IntegerField(allow_null=True)
    last_error = serializers.CharField(allow_blank=True)
    log = WebhookAttemptOut(many=True)


class WebhookDeliveryPageOut(_Base):
    results = WebhookDeliveryOut(many=True)
    next = serializers.URLField(allow_null=True)


# The agents' read side (api.discovery, docs/api.md: Search, Proposals, Entities).


class SearchResultOut(_Base):
    type = serializers.ChoiceField(["entity", "memory", "source"])
    id = serializers.CharField(help_text="ent_…, mem_… or src_…")
    statement = serializers.CharField(allow_blank=True, help_text="One line, at most 160 chars.")
    status = serializers.CharField(
        help_text="A memory version's status; 'active' or 'erased' for an entity; "
        "'recorded' or 'revoked' for a source."
    )
    matched = serializers.ListField(
        child=serializers.CharField(),
        help_text="Why it matched: name, alias, external_ref (entity); field, statement, "
        "value, text, subject, referenced_entity (memory); content (source).",
    )
    score = serializers.FloatField(help_text="Relative, for ordering only.")
    kind = serializers.CharField(help_text="The entity's, memory's or source's kind.")
    name = serializers.CharField(required=False, help_text="entity")
    external_ref = serializers.CharField(
        required=False, allow_null=True, help_text="entity, source"
    )
    version = serializers.IntegerField(required=False, help_text="memory: the matched version")
    subject = serializers.CharField(required=False, allow_null=True, help_text="memory")
    field = serializers.CharField(required=False, help_text="memory")
    references = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="memory: referenced entities"
    )


class SearchPageOut(_Base):
    results = SearchResultOut(many=True)
    next = serializers.URLField(allow_null=True)
    match = serializers.ChoiceField(
        ["all", "some"],
        help_text="'all': every candidate has every word of q (in its own text or through "
        "an entity it is about); 'some': none had them all, so candidates are ranked by the "
        "words they have. An empty answer is 'all'.",
    )


class EntityFactOut(MemoryOut):
    relation = serializers.ChoiceField(["subject", "referenced"])


class FactPageOut(_Base):
    results = EntityFactOut(many=True)
    next = serializers.URLField(allow_null=True)


class ProposalOut(_Base):
    memory_id = serializers.CharField()
    version = serializers.IntegerField(min_value=1)
    kind = serializers.ChoiceField(MemoryKind.values)
    subject = serializers.CharField(allow_null=True)
    subject_mention = serializers.CharField(allow_null=True)
    field = serializers.CharField()
    statement = serializers.CharField(allow_blank=True)
    status = serializers.ChoiceField(Status.values)
    in_use = serializers.BooleanField()
    reasons = serializers.ListField(child=serializers.CharField())
    recorded_at = serializers.DateTimeField()
    status_changed_at = serializers.DateTimeField()


class ProposalPageOut(_Base):
    results = ProposalOut(many=True)
    next = serializers.URLField(allow_null=True)


class EntityKindOut(_Base):
    kind = serializers.CharField()
    entities = serializers.IntegerField(min_value=1)


class EntityKindsOut(_Base):
    kinds = EntityKindOut(many=True)


class ExternalRefMatchOut(MatchOut):
    candidates = EntityOut(many=True)  # type: ignore[assignment]
