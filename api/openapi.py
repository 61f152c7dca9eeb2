"""Typed response bodies for the OpenAPI description (documentation only: the views build
their answers with the ``*_representation`` functions, and tests/openapi_check.py checks
every real answer of the test suite against these)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

_Base = serializers.Serializer[Any]


def _time(**kwargs: Any) -> serializers.DateTimeField:
    return serializers.DateTimeField(**kwargs)


class ApprovalOut(_Base):
    reviewer = serializers.CharField()
    decision = serializers.CharField()
    comment = serializers.CharField(allow_blank=True)
    at = _time()


class ChecksSummaryOut(_Base):
    status = serializers.ChoiceField(["none", "running", "passed", "failed"])
    passed = serializers.IntegerField(min_value=0)
    failed = serializers.IntegerField(min_value=0)
    total = serializers.IntegerField(min_value=0)


class MemoryOut(_Base):
    id = serializers.CharField()
    version = serializers.IntegerField(min_value=1)
    active_version = serializers.IntegerField(allow_null=True)
    kind = serializers.CharField()
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
    assertion = serializers.CharField()
    verification = serializers.CharField()
    status = serializers.CharField()
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


class MemoryPageOut(_Base):
    results = MemoryOut(many=True)
    next = serializers.URLField(allow_null=True)


class SourceOut(_Base):
    id = serializers.CharField()
    kind = serializers.CharField()
    content = serializers.CharField(allow_blank=True)
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
    """What activation changes in one context, by id (API.md: checks listing)."""

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
    outcome = serializers.ChoiceField(["passed", "failed"])
    detail = serializers.CharField(allow_blank=True)
    impact = ImpactOut(many=True)
    policy_version = serializers.CharField()
    ran_at = _time()
    version = serializers.IntegerField(min_value=1)


class RetiredOut(_Base):
    memory = MemoryOut()
    flagged_tasks = serializers.ListField(child=serializers.CharField())


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
        ["name", "alias", "name_token", "alias_token", "alias_prefix"],
        help_text="name/alias: equal to it; *_token: has every word of the mention as a "
        "whole word; alias_prefix: an alias starts with the mention",
    )


class MatchOut(_Base):
    decision = serializers.ChoiceField(["none", "matched", "ambiguous"])
    candidates = MatchCandidateOut(many=True)


class PublishedPolicyOut(PolicyOut):
    revalidation = serializers.CharField()


class RevalidationStartedOut(_Base):
    revalidation = serializers.CharField()
