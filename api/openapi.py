"""Typed response bodies for the OpenAPI description (documentation only: the views build
their answers with the ``*_representation`` functions, and tests/openapi_check.py checks
every real answer of the test suite against these)."""

from __future__ import annotations

from typing import Any

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
