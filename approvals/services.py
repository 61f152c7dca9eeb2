"""Review decisions: approve, reject, retire, recheck, scenarios, link subject, revoke.

Each locks the version it decides on, checks status and authority, and writes its audit
event in one transaction. The proposer never counts; agents never decide (docs/design.md)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from approvals.models import Approval, ScenarioRemoval
from audit.chain import digest
from audit.services import audit_append
from core.authority import (
    RETIRE,
    Authority,
    has_tenant_permission,
    is_proposer,
    may_change_scenarios,
    may_clarify,
    may_review,
)
from core.errors import Conflict, Forbidden, InvalidContent, NotFound
from core.kinds import MemoryKind
from core.principals import Principal
from memory import catalog, clarifications, events, rules
from memory.effects import (
    after_checks_requested,
    after_retired,
    after_scenario_added,
    after_version_recorded,
)
from memory.entities import entity_record, require_live
from memory.lifecycle import (
    IN_USE_OR_OPEN,
    bump_on_commit,
    end_use,
    locked_versions,
    version_transition,
)
from memory.models import (
    OPEN_STATUSES,
    Clarification,
    Entity,
    MemoryItem,
    MemoryVersion,
    Scenario,
    Source,
    Status,
)
from memory.references import check_value_references, record_value_references


def _require_person(principal: Principal, action: str) -> None:
    if principal.user is None:
        raise Forbidden(f"Agents cannot {action}; a person with authority must.")


def _lock_head(item: MemoryItem) -> MemoryVersion:
    locked = MemoryItem.objects.select_for_update(no_key=True).get(pk=item.pk)
    return (
        MemoryVersion.objects.select_for_update(of=("self",), no_key=True)
        .select_related("tenant", "owner")
        .get(item=locked, number=locked.head_version)
    )


def _check_reviewer(principal: Principal, version: MemoryVersion, action: str) -> None:
    _require_person(principal, action)
    if is_proposer(principal, version):
        raise Forbidden(f"The proposer cannot {action} their own proposal.")
    if not may_review(principal, version):
        raise Forbidden(f"You have no authority to {action} a {version.kind} with this scope.")


def _record_decision(
    principal: Principal, version: MemoryVersion, decision: str, comment: str
) -> None:
    assert principal.user is not None  # noqa: S101 - checked by _require_person
    try:
        with transaction.atomic():
            Approval.objects.create(
                version=version,
                reviewer=principal.user,
                decision=decision,
                comment=comment,
                at=timezone.now(),
            )
    except IntegrityError as exc:
        raise Conflict("You have already decided on this version.") from exc


def approvals_complete(version: MemoryVersion, *, adding: str | None = None) -> bool:
    """Whether the version has every approval it needs; with ``adding``, once that
    reviewer's approval is given too (the dashboard offers replacing on it)."""
    approvers = set(
        version.approvals.filter(decision=Approval.Decision.APPROVE).values_list(
            "reviewer__username", flat=True
        )
    )
    if adding is not None:
        approvers.add(adding)
    named = set(version.required_reviewers)
    return len(approvers) >= version.approvals_required and named <= approvers


def version_approve(*, principal: Principal, item: MemoryItem, comment: str) -> MemoryVersion:
    with transaction.atomic(durable=True):
        return _approve(principal, _lock_head(item), comment)


def _approve(principal: Principal, version: MemoryVersion, comment: str) -> MemoryVersion:
    _check_reviewer(principal, version, "approve")
    if version.status != Status.PENDING_REVIEW:
        raise Conflict(f"Only a pending_review version can be approved; this is {version.status}.")
    _record_decision(principal, version, Approval.Decision.APPROVE, comment)
    audit_append(
        tenant=version.tenant,
        actor=principal.name,
        action="memory.approved",
        target_type="memory",
        target_id=version.item_id,
        data={"version": version.number, "comment_sha256": digest(comment)},
    )
    if approvals_complete(version):
        version.verification = rules.verification_on_approval(version)
        version.save(update_fields=["verification"])
        version_transition(
            version=version,
            to=Status.CHECKING,
            actor=principal.name,
            reason="approvals complete",
            verification=version.verification,
        )
        after_checks_requested(version)
    return version


REJECTABLE = (Status.PENDING_REVIEW, Status.CHECKS_FAILED)


def version_reject(*, principal: Principal, item: MemoryItem, reason: str) -> MemoryVersion:
    """Reject a version under review, or one whose checks failed (issue 43: a failure
    caused by a wrong scenario must not leave the reviewer without a way to end it)."""
    with transaction.atomic(durable=True):
        version = _lock_head(item)
        _check_reviewer(principal, version, "reject")
        if version.status not in REJECTABLE:
            raise Conflict(
                "Only a pending_review version or one whose checks failed can be rejected; "
                f"this is {version.status}."
            )
        # A reviewer who approved before the checks failed rejects it now: the approval
        # stays as given, and the rejection is the transition (audited with its reason).
        if not version.approvals.filter(reviewer=principal.user).exists():
            _record_decision(principal, version, Approval.Decision.REJECT, reason)
        elif version.status == Status.PENDING_REVIEW:
            raise Conflict("You have already decided on this version.")
        version_transition(version=version, to=Status.REJECTED, actor=principal.name, reason=reason)
        # A rejected correction no longer makes the active version pending_correction.
        bump_on_commit([version])
    return version


def memory_retire(
    *, principal: Principal, item: MemoryItem, reason: str, in_flight: str = "reverify"
) -> list[str]:
    """End use at once: active and open versions become ``retired``; returns the tasks
    flagged for re-verification (none when the caller says ``continue``)."""
    with transaction.atomic(durable=True):
        return _retire(principal, item, reason, in_flight)


def _retire(principal: Principal, item: MemoryItem, reason: str, in_flight: str) -> list[str]:
    head = _lock_head(item)
    versions = locked_versions(item, IN_USE_OR_OPEN)
    # Authority over every version ended, not the head alone (issue 33); with nothing
    # to end, over the head, so a stranger learns 403 rather than the item's status.
    authority = Authority.load(principal)
    if not authority.may_retire_all(versions or [head]):
        _require_person(principal, "retire memory")
        raise Forbidden(_retire_refusal(authority, [head, *versions]))
    if not versions:
        raise Conflict(f"Nothing to retire: the memory is {head.status}.")
    return end_use(
        item=item,
        versions=versions,
        to=Status.RETIRED,
        actor=principal.name,
        reason=reason,
        flag_event=None if in_flight == "continue" else "retired",
    )


def _retire_refusal(authority: Authority, versions: Sequence[MemoryVersion]) -> str:
    refusal = "Retiring this memory needs retire_memory over its scope."
    outside = sorted({v.number for v in versions if not authority.may_retire(v)})
    if authority.may_retire(versions[0]) and outside:
        named = ", ".join(f"v{number}" for number in outside)
        refusal += f" It would also end {named}, whose scope is outside your authority."
    return refusal


def version_recheck(*, principal: Principal, item: MemoryItem) -> MemoryVersion:
    with transaction.atomic(durable=True):
        return _recheck(principal, _lock_head(item))


def _recheck(principal: Principal, version: MemoryVersion) -> MemoryVersion:
    _require_person(principal, "recheck")
    if not may_review(principal, version):
        raise Forbidden("Rechecking needs review authority over this memory's scope.")
    if version.status != Status.CHECKS_FAILED:
        raise Conflict(
            f"Only a version whose checks failed can be rechecked; this is {version.status}."
        )
    version_transition(
        version=version, to=Status.CHECKING, actor=principal.name, reason="recheck requested"
    )
    after_checks_requested(version)
    return version


def memory_replace(
    *, principal: Principal, item: MemoryItem, older: MemoryItem, comment: str
) -> MemoryVersion:
    """Send this memory's version to its checks (approved or rechecked) and retire an
    older memory it would tie with, in one transaction: both or neither. Refused while
    more approvals are wanted, since the older memory would then be gone with nothing
    on its way to replace it."""
    if older.pk == item.pk:
        raise Conflict("A memory cannot replace itself.")
    with transaction.atomic(durable=True):
        # Both rows locked in one order, so two opposite replacements wait, not deadlock.
        list(
            MemoryItem.objects.select_for_update(no_key=True)
            .filter(pk__in=[item.pk, older.pk])
            .order_by("pk")
        )
        head = _lock_head(item)
        if head.status == Status.PENDING_REVIEW:
            version = _approve(principal, head, comment)
            if version.status != Status.CHECKING:
                raise Conflict(
                    "Your approval is not the last one this version needs, so it would not "
                    "start its checks; approve it, and replace once the approvals are complete."
                )
        else:
            version = _recheck(principal, head)
        _retire(principal, older, f"Replaced by “{head.statement}”", "reverify")
    return version


def scenario_add(*, principal: Principal, item: MemoryItem, data: Mapping[str, Any]) -> Scenario:
    """Written by the proposer or a reviewer of the item (docs/design.md): a scenario can keep
    an item out of use, so nobody else may add one."""
    with transaction.atomic(durable=True):
        version = _lock_head(item)
        if not may_change_scenarios(principal, version):
            raise Forbidden("Only the proposer or a reviewer of this memory may add scenarios.")
        if version.status not in OPEN_STATUSES:
            raise Conflict(
                f"Scenarios can be added only before activation; this is {version.status}."
            )
        scenario = Scenario.objects.create(
            version=version,
            kind=data["kind"],
            context=data.get("context") or {},
            valid_at=data.get("valid_at"),
            expect=data["expect"],
            created_by=principal.name,
        )
        audit_append(
            tenant=version.tenant,
            actor=principal.name,
            action="memory.scenario_added",
            target_type="memory",
            target_id=version.item_id,
            data={
                "version": version.number,
                "scenario": scenario.pk,
                "kind": scenario.kind,
                "expect": scenario.expect,
            },
        )
        after_scenario_added(version)
    return scenario


def scenario_remove(
    *, principal: Principal, item: MemoryItem, scenario_id: int, reason: str
) -> ScenarioRemoval:
    """Take a custom scenario out before activation (issue 43): by the proposer or a
    reviewer of the item, with a reason, audited. The scenario stays as written; no check
    asks it again, and a correction no longer starts from it. The preview reruns without
    it; a version whose checks failed is rechecked or rejected as before."""
    with transaction.atomic(durable=True):
        version = _lock_head(item)
        scenario = (
            Scenario.objects.select_for_update(of=("self",))
            .select_related("version")
            .filter(pk=scenario_id, version__item=item, version__number__lte=version.number)
            .first()
        )
        if scenario is None:
            raise NotFound("This memory has no such scenario.")
        if not may_change_scenarios(principal, version):
            raise Forbidden("Only the proposer or a reviewer of this memory may remove scenarios.")
        if version.status not in OPEN_STATUSES or scenario.version.activated_at is not None:
            raise Conflict(
                "A scenario can be removed only before activation; "
                f"this memory is {version.status}."
            )
        if ScenarioRemoval.objects.filter(scenario=scenario).exists():
            raise Conflict("This scenario was already removed.")
        removal = ScenarioRemoval.objects.create(
            scenario=scenario,
            removed_by=principal.name,
            reason=reason,
            removed_at=timezone.now(),
        )
        audit_append(
            tenant=version.tenant,
            actor=principal.name,
            action="memory.scenario_removed",
            target_type="memory",
            target_id=version.item_id,
            data={
                "version": version.number,
                "scenario": scenario.pk,
                "kind": scenario.kind,
                "expect": scenario.expect,
                "reason_sha256": digest(reason),
            },
        )
        # Without it the preview may say something else: run it again, as for a new one.
        after_scenario_added(version)
    return removal


def memory_link_subject(
    *, principal: Principal, item: MemoryItem, subject_id: str
) -> MemoryVersion:
    """A reviewer resolves a held mention to an entity; the item then enters review."""

    with transaction.atomic(durable=True):
        version = _held_head(principal, item)
        entity = Entity.objects.filter(tenant=version.tenant, pk=subject_id).first()
        if entity is None:
            raise InvalidContent({"subject": [f"no entity {subject_id!r} in this tenant"]})
        require_live([entity.pk], member="subject")
        _link(principal, item, version, entity)
    return version


def memory_link_new_subject(
    *,
    principal: Principal,
    item: MemoryItem,
    kind: str,
    name: str,
    aliases: Sequence[str] = (),
) -> MemoryVersion:
    """No entity fits the mention: the reviewer creates it (with aliases) and links it in
    one transaction, so a refusal leaves no orphan entity behind."""
    with transaction.atomic(durable=True):
        version = _held_head(principal, item)
        entity = entity_record(principal=principal, kind=kind, name=name, aliases=aliases)
        _link(principal, item, version, entity)
    return version


def _held_head(principal: Principal, item: MemoryItem) -> MemoryVersion:
    version = _lock_head(item)
    _require_person(principal, "link a subject")
    if not may_review(principal, version):
        raise Forbidden("Linking needs review authority over this memory's scope.")
    if version.status != Status.HELD_UNRESOLVED:
        raise Conflict(f"Only a held_unresolved memory can be linked; this is {version.status}.")
    return version


def _link(principal: Principal, item: MemoryItem, version: MemoryVersion, entity: Entity) -> None:
    MemoryItem.objects.filter(pk=item.pk).update(subject=entity)
    MemoryVersion.objects.filter(item_id=item.pk).update(subject=entity)
    version.subject = entity
    settled = clarifications.settle(
        version, Clarification.Member.SUBJECT, entity.pk, principal.name
    )
    if not settled:
        clarifications.offer_subject_values(principal, version)
    else:
        _released(
            principal,
            version,
            f"subject linked to {entity.name}",
            event_reason=f"subject linked to {entity.pk}",
            subject=entity.pk,
        )


def _released(
    principal: Principal, version: MemoryVersion, reason: str, *, event_reason: str, **audit: Any
) -> None:
    """Nothing about the held version is unclear any more: it enters review (or, for a
    preference, its checks). ``reason`` is in words for whoever may read the version;
    the webhooks' ``event_reason`` names ids only."""
    to = Status.CHECKING if version.kind == MemoryKind.PREFERENCE else Status.PENDING_REVIEW
    version_transition(
        version=version,
        to=to,
        actor=principal.name,
        reason=reason,
        event_reason=event_reason,
        **audit,
    )
    after_version_recorded(version)


def _clarified_reason(option: clarifications.Option) -> str:
    """What was chosen, in words, for whoever may read this version: its value (the
    version's own now). Not the memory it came from: a statement here would be a copy
    no erasure of that memory's subject follows. The dashboard names it live, as far
    as the reader may see it."""
    value = option.body["value"]
    said = f"“{value}”" if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return f"value clarified: {said}"


def memory_clarify(
    *, principal: Principal, item: MemoryItem, choice: str, member: str | None
) -> MemoryVersion:
    """The proposer or a reviewer answers a held proposal's question (docs/api.md,
    Clarification): the subject with an entity id (one of the options or any entity of the
    tenant, e.g. one just created), the value with one of its options' ids."""
    with transaction.atomic(durable=True):
        version = _lock_head(item)
        if not may_clarify(principal, version):
            raise Forbidden("Only the proposer or a reviewer of this scope may clarify it.")
        questions = list(clarifications.open_questions(version).select_for_update())
        question = next((q for q in questions if member in (None, q.member)), None)
        if version.status != Status.HELD_UNRESOLVED or question is None:
            raise Conflict(f"This memory asks no open question (it is {version.status}).")
        if question.member == Clarification.Member.SUBJECT:
            entity = Entity.objects.filter(tenant=version.tenant, pk=choice).first()
            if entity is None:
                raise InvalidContent({"choice": [f"no entity {choice!r} in this tenant"]})
            require_live([entity.pk], member="choice")
            _link(principal, item, version, entity)
            audited: dict[str, Any] = {"subject": entity.pk}
        else:
            # Only what the chooser may see can be chosen: another option is unknown to them.
            readable = clarifications.readable_options(principal, question.options)
            option = next((o for o in readable if o.body["id"] == choice), None)
            if option is None:
                if not readable and clarifications.waits_for_subject(question, version):
                    raise InvalidContent(
                        {
                            "member": [
                                "the value question waits for the subject: answer the "
                                "subject first, then the values it may mean are offered"
                            ]
                        }
                    )
                ids = ", ".join(o.body["id"] for o in readable) or "none you may see"
                raise InvalidContent({"choice": [f"must be one of the options: {ids}"]})
            value = option.body["value"]
            errors = rules.Errors()
            definition = catalog.definitions_for(version.tenant_id, {version.field})
            catalog.check_proposal(
                definition.get(version.field),
                kind=version.kind,
                value=value,
                scope=version.scope,
                errors=errors,
            )
            check_value_references(version.tenant, value, errors)
            if option.origin is not None:
                _narrow_to_origin(version, option.origin, errors)
            errors.raise_if_any()
            version.value = value
            MemoryVersion.objects.filter(pk=version.pk).update(
                value=value,
                visibility=version.visibility,
                required_visibility=version.required_visibility,
                source_ids=version.source_ids,
            )
            if option.origin is not None:
                version.sources.add(*option.origin.sources.all())
            record_value_references(version)
            audited = {"value_sha256": digest(value)}
            if option.origin is not None:
                audited["copied_from"] = f"{option.origin.item_id} v{option.origin.number}"
            if clarifications.settle(version, question.member, choice, principal.name):
                copied = audited.get("copied_from")
                _released(
                    principal,
                    version,
                    _clarified_reason(option),
                    event_reason=f"value clarified as {choice}"
                    + (f" (copied from {copied})" if copied else ""),
                )
        audit_append(
            tenant=version.tenant,
            actor=principal.name,
            action="memory.clarified",
            target_type="memory",
            target_id=version.item_id,
            data={"version": version.number, "member": question.member, **audited},
        )
    return version


def _narrow_to_origin(version: MemoryVersion, origin: MemoryVersion, errors: rules.Errors) -> None:
    """A value copied from another memory brings that memory's basis along: its sources
    are cited and its own labels kept, so the new version is never readable by more
    people than the one it copied (and a revoked source retires both)."""
    if list(origin.visibility) != ["*"]:
        own = list(version.visibility)
        narrowed = (
            list(origin.visibility) if own == ["*"] else sorted(set(own) & set(origin.visibility))
        )
        if not narrowed:
            errors.add(
                "choice",
                f"that value comes from a memory visible to holders of "
                f"{' or '.join(origin.visibility)}, and this memory to holders of "
                f"{' or '.join(own)}; a memory carries one set of labels, so it cannot keep "
                "both: propose the value again with the labels it should carry",
            )
            return
        version.visibility = narrowed
    version.source_ids = list(dict.fromkeys([*version.source_ids, *origin.source_ids]))
    labels = dict(Source.objects.filter(pk__in=version.source_ids).values_list("pk", "visibility"))
    version.required_visibility = _required_visibility(version, labels)


def source_revoke(*, principal: Principal, source: Source, reason: str) -> list[str]:
    """The basis is withdrawn: every active or pending version citing it is retired."""
    _require_person(principal, "revoke a source")
    with transaction.atomic(durable=True):
        locked = Source.objects.select_for_update(no_key=True).get(pk=source.pk)
        if locked.revoked_at is not None:
            raise Conflict("This source is already revoked.")
        affected = list(
            MemoryVersion.objects.filter(sources=locked, status__in=IN_USE_OR_OPEN)
            .values_list("item_id", flat=True)
            .distinct()
        )
        items = list(MemoryItem.objects.filter(pk__in=affected).order_by("pk"))
        # Every version the revocation ends, locked (lineage first, in id order), and
        # authority over each of them: not one version per item (issue 33).
        ending = {
            item.pk: [v for v in locked_versions(item, IN_USE_OR_OPEN) if locked.pk in v.source_ids]
            for item in items
        }
        every = [v for versions in ending.values() for v in versions]
        authority = Authority.load(principal)
        if not (authority.may_retire_all(every) if every else authority.has(RETIRE)):
            raise Forbidden(
                "Revoking this source needs retire_memory over every memory based on it."
            )
        locked.revoked_at = timezone.now()
        locked.revoked_reason = reason
        locked.save(update_fields=["revoked_at", "revoked_reason"])
        audit_append(
            tenant=locked.tenant,
            actor=principal.name,
            action="source.revoked",
            target_type="source",
            target_id=locked.pk,
            data={"reason_sha256": digest(reason), "memories": [i.pk for i in items]},
        )
        for item in items:
            end_use(
                item=item,
                versions=ending[item.pk],
                to=Status.RETIRED,
                actor=principal.name,
                reason=f"source {locked.pk} revoked: {reason}",
                flag_event="retired",
                announce=False,
            )
        # One revocation is one event: each owner gets one email naming every memory
        # of theirs it ended, not one email per memory (issue 37).
        after_retired(every)
        events.event_emit(
            tenant=locked.tenant,
            event_type=events.SOURCE_REVOKED,
            data={
                "source_id": locked.pk,
                "memories": [item.pk for item in items],
                "reason": events.reason_text(reason),
            },
        )
    return [item.pk for item in items]


VISIBILITY_REFUSAL = "Changing a source's labels needs the retire_memory permission on the tenant."


def _required_visibility(
    version: MemoryVersion, labels: Mapping[str, list[str]]
) -> list[list[str]]:
    """What a reader must satisfy, rebuilt as at proposal: every source's labels, then the
    item's own visibility when it narrows (memory.services._create_version)."""
    required = [list(labels[pk]) for pk in version.source_ids if pk in labels]
    if list(version.visibility) != ["*"]:
        required.append(list(version.visibility))
    return required


def source_visibility_change(
    *, principal: Principal, source: Source, visibility: list[str], reason: str
) -> Source:
    """The original data's access changed: the source's labels follow, and so does every
    version built on it, from the next resolve on (the subjects' cache generations are
    bumped on commit, before the request returns). Sources are otherwise immutable."""
    _require_person(principal, "change a source's labels")
    if not has_tenant_permission(principal, "retire_memory"):
        raise Forbidden(VISIBILITY_REFUSAL)
    labels = sorted(dict.fromkeys(visibility))
    errors = rules.Errors()
    rules.check_labels(principal.tenant, labels, errors)
    errors.raise_if_any()
    with transaction.atomic(durable=True):
        locked = Source.objects.select_for_update(no_key=True).get(pk=source.pk)
        before = list(locked.visibility)
        locked.visibility = labels
        locked.save(update_fields=["visibility"])
        versions = list(
            MemoryVersion.objects.select_for_update(no_key=True)
            .filter(sources=locked)
            .order_by("pk")
        )
        cited = {pk for v in versions for pk in v.source_ids}
        current = dict(Source.objects.filter(pk__in=cited).values_list("pk", "visibility"))
        for version in versions:
            version.required_visibility = _required_visibility(version, current)
        MemoryVersion.objects.bulk_update(versions, ["required_visibility"])
        audit_append(
            tenant=locked.tenant,
            actor=principal.name,
            action="source.visibility_changed",
            target_type="source",
            target_id=locked.pk,
            data={
                "before": before,
                "after": labels,
                "reason_sha256": digest(reason),
                "memories": sorted({v.item_id for v in versions}),
            },
        )
        bump_on_commit(versions)
    return locked
