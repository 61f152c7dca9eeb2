"""The resolution policy: the current precedence, publishing a new one, re-validation."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from approvals.models import Revalidation
from approvals.revalidation import (
    DryRun,
    access_revalidation,
    policy_dry_run,
    policy_publish_and_revalidate,
    revalidation_request,
)
from core.authority import has_tenant_permission, require_tenant_permission
from core.errors import DomainError
from core.principals import Principal
from dashboard.access import dashboard_view, page_context
from dashboard.forms import PolicyForm, RevalidateForm, refusal_words
from memory.models import Policy
from memory.policy import MANAGE_POLICY_REFUSAL
from memory.selectors import current_policy

POLL_SECONDS = 2
JOBS_SHOWN = 10


def _form_for(policy: Policy) -> PolicyForm:
    precedence = policy.precedence
    return PolicyForm(
        initial={
            name: ", ".join(precedence.get(name, []))
            for name in ("order", "kind_rank", "verification_rank")
        }
    )


def _render(
    request: HttpRequest,
    principal: Principal,
    *,
    status: int = 200,
    policy_form: forms.Form | None = None,
    revalidate_form: forms.Form | None = None,
    dry_run: DryRun | None = None,
) -> HttpResponse:
    policy = current_policy(principal.tenant)
    jobs = Revalidation.objects.filter(tenant=principal.tenant).order_by("-started_at", "-pk")
    return render(
        request,
        "dashboard/policy.html",
        page_context(
            principal,
            policy=policy,
            history=Policy.objects.filter(tenant=principal.tenant).order_by("-version")[:20],
            jobs=jobs[:JOBS_SHOWN],
            can_manage=has_tenant_permission(principal, "manage_policy"),
            policy_form=policy_form or _form_for(policy),
            revalidate_form=revalidate_form or RevalidateForm(),
            poll_seconds=POLL_SECONDS,
            dry_run=dry_run,
        ),
        status=status,
    )


@require_GET
@dashboard_view
def policy_page(request: HttpRequest, principal: Principal) -> HttpResponse:
    return _render(request, principal)


def _require_manage_policy(principal: Principal) -> None:
    """Refuse before reading the form: a person without authority gets no form errors."""
    require_tenant_permission(principal, "manage_policy", MANAGE_POLICY_REFUSAL)


@require_POST
@dashboard_view
def publish(request: HttpRequest, principal: Principal) -> HttpResponse:
    """Publish, then re-run the checks of every active item under the new policy."""
    _require_manage_policy(principal)
    form = PolicyForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Please correct the policy form.")
        return _render(request, principal, status=422, policy_form=form)
    reason = form.cleaned_data["reason"]
    try:
        policy, _ = policy_publish_and_revalidate(
            principal=principal, precedence=form.precedence(), reason=reason
        )
    except DomainError as exc:
        messages.error(request, refusal_words(exc))
        return _render(request, principal, status=exc.status, policy_form=form)
    messages.success(
        request, f"Policy {policy.version} published; every active item is being re-checked."
    )
    return redirect(reverse("dashboard:policy"))


@require_POST
@dashboard_view
def dry_run(request: HttpRequest, principal: Principal) -> HttpResponse:
    """What publishing the form's precedence would fail or suspend, published or not."""
    _require_manage_policy(principal)
    form = PolicyForm(request.POST)
    form.fields["reason"].required = False  # nothing is published, so nothing is audited
    if not form.is_valid():
        messages.error(request, "Nothing was tried: see the field marked below.")
        return _render(request, principal, status=422, policy_form=form)
    try:
        result = policy_dry_run(principal=principal, precedence=form.precedence())
    except DomainError as exc:
        messages.error(request, "Nothing was tried: see the form below.")
        form.add_error(None, refusal_words(exc))
        return _render(request, principal, status=exc.status, policy_form=form)
    return _render(request, principal, policy_form=form, dry_run=result)


@require_POST
@dashboard_view
def revalidate(request: HttpRequest, principal: Principal) -> HttpResponse:
    _require_manage_policy(principal)
    form = RevalidateForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Say what changed.")
        return _render(request, principal, status=422, revalidate_form=form)
    revalidation_request(principal=principal, reason=form.cleaned_data["reason"])
    messages.success(request, "Re-validation started.")
    return redirect(reverse("dashboard:policy"))


@require_GET
@dashboard_view
def revalidation_progress(request: HttpRequest, principal: Principal, job_id: str) -> HttpResponse:
    """The polled progress bar of one job; it stops polling when the job is done."""
    job = access_revalidation(principal, job_id)
    return render(
        request,
        "dashboard/_revalidation.html",
        page_context(principal, job=job, poll_seconds=POLL_SECONDS),
    )
