"""The item page: everything a reviewer needs to decide, and the decisions themselves.

Every action is a POST that calls one service; a refusal (403), a race lost to another
reviewer (409) or an item that vanished from view (404) comes back as a message on the
page with that status, and success redirects (post/redirect/get)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRefresh

from approvals import services
from approvals.explain import failure_for, ties_for
from approvals.freshness import Stale, preview_refresh
from approvals.models import Approval, CheckResult
from approvals.wording import reason_words
from audit.selectors import audit_events
from core.authority import Authority, is_proposer, may_change_scenarios
from core.errors import Conflict, DomainError, InvalidContent, NotFound
from core.principals import Principal
from dashboard import forms as dashboard_forms
from dashboard import values
from dashboard.access import dashboard_memory, dashboard_view, error_page, page_context
from dashboard.browse import entity_choices
from dashboard.decisions import (
    current_run,
    despite_words,
    preview_failures,
    scenario_rows,
)
from dashboard.history import lineage_changes, lineage_timeline, version_diff
from dashboard.impact import (
    CheckView,
    ImpactRow,
    check_views,
    impact_rows,
    impact_views,
    tied_with,
    view_rows,
)
from dashboard.linking import candidate_cards, link_confirmation, link_effect, linked_message
from dashboard.questions import ClarifyForm, chosen_from, open_questions
from dashboard.queue import next_in_queue
from dashboard.templatetags.memgov_words import status_word
from memory import proposals
from memory.catalog import advisory_for
from memory.lifecycle import IN_USE_OR_OPEN
from memory.models import OPEN_STATUSES, MemoryItem, MemoryVersion, Status
from memory.representations import checks_summary
from memory.selectors import access_source, entity_match, memory_versions, revocation_reach

POLL_SECONDS = 2


class ReplaceForm(forms.Form):
    older = forms.CharField(max_length=40)


@dataclass(frozen=True)
class CheckGroup:
    run: str
    policy_version: str
    results: tuple[CheckResult, ...]
    views: tuple[CheckView, ...] = ()
    current: bool = False  # the run the status line and the summary count

    @property
    def ran_at(self) -> Any:
        return max(r.ran_at for r in self.results)

    @property
    def failed(self) -> int:
        return sum(1 for r in self.results if r.outcome == CheckResult.Outcome.FAILED)

    @property
    def passed(self) -> int:
        return len(self.results) - self.failed


def check_groups(principal: Principal, version: MemoryVersion) -> list[CheckGroup]:
    """Results per (run, policy version), the run the status counts first (issue 43: the
    status line and the panel show the same run), then the others latest first, each with
    the memories its detail names (statement and value, as far as the reviewer may see)."""
    results = list(version.checks.all())
    groups: dict[tuple[str, str], list[CheckResult]] = {}
    for result in results:
        groups.setdefault((result.run, result.policy_version), []).append(result)
    counted = current_run(results)
    current = counted[:2] if counted else None
    ordered = sorted(
        groups.items(),
        key=lambda kv: (kv[0] == current, max(r.ran_at for r in kv[1])),
        reverse=True,
    )
    views = {id(v.result): v for v in check_views(principal, version, results)}
    return [
        CheckGroup(
            run, policy, tuple(rows), tuple(views[id(r)] for r in rows), (run, policy) == current
        )
        for (run, policy), rows in ordered
    ]


def preview_freshness(head: MemoryVersion) -> Stale | None:
    """What changed since the last preview run of a version in review (a scenario added
    or removed, a memory of its field starting or ending use, a policy, a revoked source),
    with the rerun asked for (``approvals.freshness``); None while the preview is current.
    Until the rerun is in, its result is not what activation would do."""
    return preview_refresh(version=head)


def status_line(principal: Principal, head: MemoryVersion) -> str:
    """Beside the status badge: for failed checks one plain sentence with statements
    (``approvals.explain``), never the engine's detail; otherwise the stored reason."""
    if head.status == Status.CHECKS_FAILED:
        return failure_for(principal, head) or "Its checks failed: see the scenario checks."
    return reason_words(head, principal)


@dataclass(frozen=True)
class Abilities:
    """What to offer; the services still decide (a stale page gets a 403 or 409)."""

    decide: bool
    retire: bool
    recheck: bool
    scenarios: bool
    revoke: bool
    already_decided: bool
    is_proposer: bool
    link: bool
    correct: bool
    # Issue 43: Reject stays once the checks failed; scenarios can be taken out.
    reject: bool = False
    remove_scenarios: bool = False


def abilities(
    authority: Authority, head: MemoryVersion, versions: Sequence[MemoryVersion]
) -> Abilities:
    """``versions``: the lineage; retiring ends every one of them in use or open, so the
    button is offered only with authority over each (as the service decides)."""
    user = authority.principal.user
    assert user is not None  # noqa: S101 - dashboard principals are people
    reviewer = authority.may_review(head)
    proposer = is_proposer(authority.principal, head)
    decided = any(a.reviewer_id == user.pk for a in head.approvals.all())
    retire = authority.may_retire(head)
    return Abilities(
        decide=head.status == Status.PENDING_REVIEW and reviewer and not proposer and not decided,
        retire=authority.may_retire_all(v for v in versions if v.status in IN_USE_OR_OPEN),
        recheck=reviewer and head.status == Status.CHECKS_FAILED,
        # The service's rule: the proposer or a reviewer, never the owner as such.
        scenarios=head.status in OPEN_STATUSES and may_change_scenarios(authority.principal, head),
        revoke=retire,
        already_decided=decided,
        is_proposer=proposer,
        link=head.status == Status.HELD_UNRESOLVED and reviewer,
        # The owner is told of failed checks and is the one to fix them (issue 37).
        correct=head.status == Status.CHECKS_FAILED and head.owner_id == user.pk,
        reject=reviewer
        and not proposer
        and (
            head.status == Status.CHECKS_FAILED
            or (head.status == Status.PENDING_REVIEW and not decided)
        ),
        remove_scenarios=head.status in OPEN_STATUSES
        and may_change_scenarios(authority.principal, head),
    )


def _replacing(
    principal: Principal,
    oversight: Authority,
    head: MemoryVersion,
    impact: list[ImpactRow] | None,
    can: Abilities,
) -> tuple[set[str], str]:
    """The tied memories this viewer can replace with this version now and, when they
    take part in deciding but cannot, why not. Replacing approves (or rechecks) and
    retires in one step, so it needs the last approval and authority to retire the older
    one; the service decides again either way."""
    tied = tied_with(impact)
    if not tied or not (can.decide or can.recheck):
        return set(), ""
    user = principal.user
    assert user is not None  # noqa: S101 - dashboard principals are people
    if can.decide and not services.approvals_complete(head, adding=user.username):
        return set(), (
            "The reviewer whose approval completes this version can replace the older one "
            "with it; until then both stay as they are."
        )
    replaceable = {memory_id for memory_id in tied if _may_retire(principal, oversight, memory_id)}
    if replaceable == set(tied):
        return replaceable, ""
    return replaceable, (
        "Replacing the older one also needs authority to retire it, which you do not "
        "have; someone who has it can replace it from this page."
    )


def _may_retire(principal: Principal, oversight: Authority, memory_id: str) -> bool:
    older, _ = dashboard_memory(principal, oversight, memory_id)
    in_use = [v for v in memory_versions(older) if v.status in IN_USE_OR_OPEN]
    return bool(in_use) and oversight.may_retire_all(in_use)


def _sources_in_order(head: MemoryVersion) -> list[Any]:
    found = {s.pk: s for s in head.sources.all()}
    return [found[pk] for pk in head.source_ids if pk in found]


def item_context(
    principal: Principal,
    oversight: Authority,
    item: MemoryItem,
    head: MemoryVersion,
    bound: dict[str, forms.Form] | None = None,
) -> dict[str, Any]:
    versions = list(memory_versions(item))
    previous = next((v for v in versions if v.number == head.number - 1), None)
    schema = values.correction_schema(principal.tenant.pk, head.field, head.value)
    blank: dict[str, forms.Form] = {
        "approve_form": dashboard_forms.ApproveForm(),
        "reject_form": dashboard_forms.RejectForm(),
        "retire_form": dashboard_forms.RetireForm(),
        "scenario_form": dashboard_forms.ScenarioForm(),
        "revoke_form": dashboard_forms.RevokeSourceForm(),
        "link_form": dashboard_forms.LinkSubjectForm(),
        "clarify_form": ClarifyForm(),
        "correct_form": dashboard_forms.CorrectionForm.for_schema(schema)(
            initial={
                "value": values.shown_value(schema, head.value),
                "head_version": head.number,
                "statement": head.statement,
                "scope": ", ".join(f"{dim}={value}" for dim, value in head.scope.items()),
            }
        ),
        "new_subject_form": dashboard_forms.NewSubjectForm(
            initial={"name": item.subject_mention, "aliases": item.subject_mention}
        ),
    }
    can = abilities(oversight, head, versions)
    # A tie is fixed by replacing or retiring the older memory, never by a correction
    # (issue 43, point 3): the owner is told that instead of offered a form.
    ties = ties_for(principal, head) if head.status == Status.CHECKS_FAILED else []
    if ties:
        can = dataclasses.replace(can, correct=False)
    questions = open_questions(principal, head)
    # One view per answer the tenant's agent keys get (issue 43, point 5).
    views = impact_views(principal, head)
    impact = view_rows(views)
    replaceable, replace_note = _replacing(principal, oversight, head, impact, can)
    held = can.link and item.subject_id is None
    stale = preview_freshness(head)
    # An approval must confirm the failures of a current preview (issue 43, point 2).
    failures = [] if stale else preview_failures(principal, head)
    events = (
        list(audit_events(tenant=principal.tenant, target=item.pk).order_by("-seq")[:50])
        if oversight.has("view_audit")
        else None
    )
    sources = _sources_in_order(head)
    if can.revoke:  # what a revocation would end, listed before anyone confirms it
        reach = revocation_reach(principal, [s.pk for s in sources])
        for source in sources:
            source.reach = reach[source.pk]
    return page_context(
        principal,
        item=item,
        head=head,
        value_json=json.dumps(head.value, indent=2, ensure_ascii=False),
        # Issue 43, point 11: a field another system holds is memory only.
        advisory=advisory_for(principal.tenant.pk, head.field),
        status_line=status_line(principal, head),
        previous=previous,
        diff=version_diff(previous, head),
        versions=versions,
        timeline=lineage_timeline(versions, timezone.now()),
        changes=lineage_changes(versions),
        sources=sources,
        approvals=list(head.approvals.all()),
        approvals_given=sum(1 for a in head.approvals.all() if a.decision == "approve"),
        checks=checks_summary(head),
        check_groups=check_groups(principal, head),
        impact=impact,
        impact_views=views,
        scenarios=scenario_rows(item, head),
        rerunning=stale is not None,
        stale=stale,
        preview_failed=failures,
        preview_failed_words=despite_words(failures),
        can=can,
        ties=ties,
        owns=head.owner_id == getattr(principal.user, "pk", None),
        replaceable=replaceable,
        replace_note=replace_note,
        # Issue 43, point 3: replacing is the primary action where Approve is.
        replace_choices=[t for key, t in tied_with(impact).items() if key in replaceable],
        subject_candidates=(
            candidate_cards(principal, oversight, item.subject_mention) if held else []
        ),
        link_effect=link_effect(head) if held else "",
        link_confirmation=link_confirmation(head) if held else "",
        all_entities=entity_choices(principal) if held else [],
        value_question=next((q for q in questions if q.about_value), None),
        may_clarify=bool(questions) and (can.is_proposer or oversight.may_review(head)),
        chosen_from=chosen_from(principal, head),
        events=events,
        poll_seconds=POLL_SECONDS,
        **{**blank, **(bound or {})},
    )


def render_item(
    request: HttpRequest,
    principal: Principal,
    memory_id: str,
    *,
    status: int = 200,
    bound: dict[str, forms.Form] | None = None,
) -> HttpResponse:
    oversight = Authority.load(principal)
    item, head = dashboard_memory(principal, oversight, memory_id)
    context = item_context(principal, oversight, item, head, bound)
    return render(request, "dashboard/item.html", context, status=status)


@require_GET
@dashboard_view
def item_page(request: HttpRequest, principal: Principal, memory_id: str) -> HttpResponse:
    return render_item(request, principal, memory_id)


@require_GET
@dashboard_view
def item_live(request: HttpRequest, principal: Principal, memory_id: str) -> HttpResponse:
    """Polled while the checks run; once they finish, the whole page reloads so that the
    status, the forms and the timeline all show the outcome."""
    oversight = Authority.load(principal)
    item, head = dashboard_memory(principal, oversight, memory_id)
    if request.GET.get("was") == Status.CHECKING and head.status != Status.CHECKING:
        return HttpResponseClientRefresh()
    stale = preview_freshness(head)
    rerunning = stale is not None
    if request.GET.get("was") == "rerunning" and not rerunning:
        return HttpResponseClientRefresh()
    context = page_context(
        principal,
        item=item,
        head=head,
        checks=checks_summary(head),
        check_groups=check_groups(principal, head),
        rerunning=rerunning,
        stale=stale,
        poll_seconds=POLL_SECONDS,
    )
    return render(request, "dashboard/_live.html", context)


Action = Callable[[Principal, MemoryItem, dict[str, Any]], str]


def _perform(
    request: HttpRequest,
    principal: Principal,
    memory_id: str,
    form_name: str,
    form_class: type[forms.Form],
    action: Action,
) -> HttpResponse:
    oversight = Authority.load(principal)
    item, _ = dashboard_memory(principal, oversight, memory_id)
    form = form_class(request.POST)
    if not form.is_valid():
        messages.error(request, "Please correct the form below.")
        return render_item(request, principal, memory_id, status=422, bound={form_name: form})
    try:
        done = action(principal, item, form.cleaned_data)
    except NotFound as exc:
        return error_page(request, exc)
    except InvalidContent as exc:
        # Beside the fields it names, with what the person typed or chose kept.
        dashboard_forms.add_errors(form, exc)
        return render_item(
            request, principal, memory_id, status=exc.status, bound={form_name: form}
        )
    except DomainError as exc:
        messages.error(request, dashboard_forms.refusal_words(exc))
        return render_item(request, principal, memory_id, status=exc.status)
    messages.success(request, done)
    return redirect(reverse("dashboard:item", args=[memory_id]), permanent=False)


def _approve(principal: Principal, item: MemoryItem, data: dict[str, Any]) -> str:
    version = services.version_approve(principal=principal, item=item, comment=data["comment"])
    if version.status == Status.CHECKING:
        return "Approved. Every approval is in: the scenario checks are running."
    given = Approval.objects.filter(version=version, decision="approve").count()
    return f"Approved ({given} of {version.approvals_required}). Waiting for another reviewer."


def _then_next(request: HttpRequest, principal: Principal, memory_id: str) -> HttpResponse:
    """After "Approve and open the next": the next memory of the reviewer's queue (in
    their saved view), or the queue itself when nothing else waits."""
    response = _perform(
        request, principal, memory_id, "approve_form", dashboard_forms.ApproveForm, _approve
    )
    if response.status_code != 302:
        return response
    following = next_in_queue(principal, after=memory_id)
    if following is None:
        messages.info(request, "That was the last memory waiting for you.")
        return redirect(reverse("dashboard:queue"))
    return redirect(reverse("dashboard:item", args=[following]))


def _reject(principal: Principal, item: MemoryItem, data: dict[str, Any]) -> str:
    services.version_reject(principal=principal, item=item, reason=data["reason"])
    return "Rejected. It will never be used."


class RemoveScenarioForm(forms.Form):
    reason = forms.CharField(max_length=4000, strip=True)


def remove_scenario_action(scenario_id: int) -> Action:
    def _remove(principal: Principal, item: MemoryItem, data: dict[str, Any]) -> str:
        services.scenario_remove(
            principal=principal, item=item, scenario_id=scenario_id, reason=data["reason"]
        )
        head = item.versions.get(number=item.head_version)
        if head.status == Status.PENDING_REVIEW:
            return "Scenario removed. The preview checks are running again without it."
        if head.status == Status.CHECKS_FAILED:
            return "Scenario removed. Run the checks again to see the result without it."
        return "Scenario removed; the next checks run without it."

    return _remove


@require_POST
@dashboard_view
def remove_scenario(
    request: HttpRequest, principal: Principal, memory_id: str, scenario_id: int
) -> HttpResponse:
    """Issue 43, point 6: a wrong custom scenario is taken out, with a reason, audited."""
    return _perform(
        request,
        principal,
        memory_id,
        f"remove_scenario_form_{scenario_id}",
        RemoveScenarioForm,
        remove_scenario_action(scenario_id),
    )


def _retire(principal: Principal, item: MemoryItem, data: dict[str, Any]) -> str:
    flagged = services.memory_retire(
        principal=principal, item=item, reason=data["reason"], in_flight=data["in_flight"]
    )
    tasks = f" {len(flagged)} task(s) must re-verify: {', '.join(flagged)}." if flagged else ""
    return f"Retired. Resolve no longer returns it.{tasks}"


def _recheck(principal: Principal, item: MemoryItem, data: dict[str, Any]) -> str:
    services.version_recheck(principal=principal, item=item)
    return "The scenario checks are running again."


def _link_existing(principal: Principal, item: MemoryItem, data: dict[str, Any]) -> str:
    version = services.memory_link_subject(
        principal=principal, item=item, subject_id=data["subject"]
    )
    return linked_message(version)


def _link_new(principal: Principal, item: MemoryItem, data: dict[str, Any]) -> str:
    """Creating an entity that has the name (or an alias) of one that exists asks first:
    two "Dana Kim"s are two people only when the reviewer says so (seed 000)."""
    same = [
        entity
        for entity, how in entity_match(principal=principal, name=data["name"], kind=None)
        if how in ("name", "alias")
    ]
    if same and not data.get("another"):
        named = "; ".join(
            f"{e.name} ({e.kind}{', ' + e.external_ref if e.external_ref else ''})" for e in same
        )
        raise InvalidContent(
            {
                "name": [
                    f"An entity with this name exists already: {named}. Link it above, or "
                    "tick “Create another entity with this name” if this is someone else."
                ]
            }
        )
    version = services.memory_link_new_subject(
        principal=principal,
        item=item,
        kind=data["kind"],
        name=data["name"],
        aliases=data["aliases"],
    )
    return f"Created the entity. {linked_message(version)}"


def _correct(principal: Principal, item: MemoryItem, data: dict[str, Any]) -> str:
    version = proposals.memory_correct(
        principal=principal,
        item=item,
        # The version the page showed: a correction of one that changed since is a 409.
        if_match=str(data["head_version"]),
        data={k: data[k] for k in ("value", "statement", "scope")},
    )
    now = status_word(version.status)
    return f"Correction proposed as version {version.number}; it is now {now}."


def _scenario(principal: Principal, item: MemoryItem, data: dict[str, Any]) -> str:
    services.scenario_add(principal=principal, item=item, data=data)
    if item.versions.get(number=item.head_version).status == Status.PENDING_REVIEW:
        return "Scenario added. The preview checks are running again with it; see the result below."
    return "Scenario added; it runs with the next checks."


DESPITE = "Approve despite these failures"


def unconfirmed_failures(
    request: HttpRequest, principal: Principal, memory_id: str
) -> HttpResponse | None:
    """Issue 43, point 2: an approval of a version whose preview failed counts only when
    the reviewer ticked that they approve despite the failures named beside the button;
    else the page comes back naming them, and nothing is approved."""
    oversight = Authority.load(principal)
    _, head = dashboard_memory(principal, oversight, memory_id)
    stale = preview_freshness(head)
    if stale is not None:  # a page that still showed the old result (issue 43, point 4)
        messages.error(
            request,
            "Not approved: its preview is out of date and is running again. "
            "Approve once the new result is shown.",
        )
        return render_item(request, principal, memory_id, status=409)
    if request.POST.get("despite") == "1":
        return None
    failures = preview_failures(principal, head)
    if not failures:
        return None
    messages.error(
        request,
        f"Not approved: {despite_words(failures)} Tick “{DESPITE}” to approve it anyway.",
    )
    return render_item(request, principal, memory_id, status=409)


@require_POST
@dashboard_view
def approve(request: HttpRequest, principal: Principal, memory_id: str) -> HttpResponse:
    refused = unconfirmed_failures(request, principal, memory_id)
    if refused is not None:
        return refused
    if request.POST.get("then") == "next":
        return _then_next(request, principal, memory_id)
    return _perform(
        request, principal, memory_id, "approve_form", dashboard_forms.ApproveForm, _approve
    )


@require_POST
@dashboard_view
def reject(request: HttpRequest, principal: Principal, memory_id: str) -> HttpResponse:
    return _perform(
        request, principal, memory_id, "reject_form", dashboard_forms.RejectForm, _reject
    )


@require_POST
@dashboard_view
def retire(request: HttpRequest, principal: Principal, memory_id: str) -> HttpResponse:
    return _perform(
        request, principal, memory_id, "retire_form", dashboard_forms.RetireForm, _retire
    )


@require_POST
@dashboard_view
def link_subject(request: HttpRequest, principal: Principal, memory_id: str) -> HttpResponse:
    return _perform(
        request, principal, memory_id, "link_form", dashboard_forms.LinkSubjectForm, _link_existing
    )


@require_POST
@dashboard_view
def create_subject(request: HttpRequest, principal: Principal, memory_id: str) -> HttpResponse:
    return _perform(
        request, principal, memory_id, "new_subject_form", dashboard_forms.NewSubjectForm, _link_new
    )


@require_POST
@dashboard_view
def recheck(request: HttpRequest, principal: Principal, memory_id: str) -> HttpResponse:
    return _perform(request, principal, memory_id, "recheck_form", forms.Form, _recheck)


@require_POST
@dashboard_view
def correct(request: HttpRequest, principal: Principal, memory_id: str) -> HttpResponse:
    """The value is read as the page's box asks for it (``values.correction_schema``)."""
    _, head = dashboard_memory(principal, Authority.load(principal), memory_id)
    form = dashboard_forms.CorrectionForm.for_schema(
        values.correction_schema(principal.tenant.pk, head.field, head.value)
    )
    return _perform(request, principal, memory_id, "correct_form", form, _correct)


@require_POST
@dashboard_view
def replace(request: HttpRequest, principal: Principal, memory_id: str) -> HttpResponse:
    return _perform(request, principal, memory_id, "replace_form", ReplaceForm, _replace)


@require_POST
@dashboard_view
def add_scenario(request: HttpRequest, principal: Principal, memory_id: str) -> HttpResponse:
    return _perform(
        request, principal, memory_id, "scenario_form", dashboard_forms.ScenarioForm, _scenario
    )


def _replace(principal: Principal, item: MemoryItem, data: dict[str, Any]) -> str:
    """Issue 37, point 5: a version that would tie with an older memory replaces it. One
    service, one transaction: this version goes to its checks and the older one is
    retired, or nothing changes."""
    oversight = Authority.load(principal)
    _, head = dashboard_memory(principal, oversight, item.pk)
    tied = tied_with(impact_rows(principal, head))
    older_told = tied.get(data["older"])
    if older_told is None:
        raise Conflict("That memory no longer ties with this one; nothing was changed.")
    older, _ = dashboard_memory(principal, oversight, data["older"])
    services.memory_replace(
        principal=principal, item=item, older=older, comment="replaces a tied memory"
    )
    running = "running" if head.status == Status.PENDING_REVIEW else "running again"
    return (
        f"Retired “{older_told.statement}”. This version's checks are {running}, without "
        "the tie; it becomes active when they pass."
    )


def _revoked_message(ended: int) -> str:
    """Counts, not ids: the reviewer reads what happened, the audit log keeps the ids."""
    if not ended:
        return "Source revoked. No memory in use was based on it."
    if ended == 1:
        return "Source revoked. The memory based on it was retired; its owner is told by email."
    return f"Source revoked. {ended} memories based on it were retired; owners are told by email."


@require_POST
@dashboard_view
def revoke_source(request: HttpRequest, principal: Principal, source_id: str) -> HttpResponse:
    """Revoke from the evidence list of an item; back to that item (by id, never a URL)."""
    memory_id = request.POST.get("memory", "")
    source = access_source(principal, source_id)
    form = dashboard_forms.RevokeSourceForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Say why the source is revoked.")
        if memory_id:
            return render_item(
                request, principal, memory_id, status=422, bound={"revoke_form": form}
            )
        return redirect(reverse("dashboard:queue"))
    try:
        affected = services.source_revoke(
            principal=principal, source=source, reason=form.cleaned_data["reason"]
        )
    except NotFound as exc:
        return error_page(request, exc)
    except DomainError as exc:
        messages.error(request, dashboard_forms.refusal_words(exc))
        if memory_id:
            return render_item(request, principal, memory_id, status=exc.status)
        return error_page(request, exc)
    messages.success(request, _revoked_message(len(affected)))
    if memory_id:
        return redirect(reverse("dashboard:item", args=[memory_id]))
    return redirect(reverse("dashboard:queue"))
