"""The overview: how long items wait, how many get approved, how many checks fail.

Counts cover only what this person may open, so a chart never reveals items they could
not see one by one."""

from __future__ import annotations

from collections import Counter
from datetime import date, datetime, timedelta

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from approvals.models import Approval, CheckResult
from core.authority import Authority
from core.principals import Principal
from dashboard.access import dashboard_view, page_context
from dashboard.charts import BarChart, bar_chart
from memory.models import MemoryVersion, Status

DAYS = 14
AGE_BUCKETS: tuple[tuple[str, timedelta], ...] = (
    ("< 1 day", timedelta(days=1)),
    ("1-3 days", timedelta(days=3)),
    ("3-7 days", timedelta(days=7)),
    ("> 7 days", timedelta.max),
)


def age_bucket(age: timedelta) -> str:
    return next(label for label, limit in AGE_BUCKETS if age < limit)


def pending_by_age(principal: Principal, oversight: Authority, now: datetime) -> BarChart:
    pending = MemoryVersion.objects.filter(tenant=principal.tenant, status=Status.PENDING_REVIEW)
    counts = Counter(age_bucket(now - v.status_changed_at) for v in pending if oversight.sees(v))
    series = [(label, label, counts[label]) for label, _ in AGE_BUCKETS]
    return bar_chart("Pending review by age", "Waiting", series)


def _days(today: date) -> list[date]:
    return [today - timedelta(days=offset) for offset in range(DAYS - 1, -1, -1)]


def per_day(title: str, moments: list[datetime], today: date) -> BarChart:
    counts = Counter(moment.date() for moment in moments)
    series = [(day.strftime("%d"), day.isoformat(), counts[day]) for day in _days(today)]
    return bar_chart(title, "Day", series)


def approvals_per_day(principal: Principal, oversight: Authority, now: datetime) -> BarChart:
    since = now - timedelta(days=DAYS)
    approvals = Approval.objects.filter(
        version__tenant=principal.tenant, decision=Approval.Decision.APPROVE, at__gte=since
    ).select_related("version")
    moments = [a.at for a in approvals if oversight.sees(a.version)]
    return per_day("Approvals per day", moments, now.date())


def failures_per_day(principal: Principal, oversight: Authority, now: datetime) -> BarChart:
    since = now - timedelta(days=DAYS)
    failed = CheckResult.objects.filter(
        version__tenant=principal.tenant, outcome=CheckResult.Outcome.FAILED, ran_at__gte=since
    ).select_related("version")
    moments = [r.ran_at for r in failed if oversight.sees(r.version)]
    return per_day("Failed scenario checks per day", moments, now.date())


@require_GET
@dashboard_view
def overview_page(request: HttpRequest, principal: Principal) -> HttpResponse:
    now = timezone.now()
    oversight = Authority.load(principal)
    failing = MemoryVersion.objects.filter(
        tenant=principal.tenant, status=Status.CHECKS_FAILED
    ).order_by("-status_changed_at")
    return render(
        request,
        "dashboard/overview.html",
        page_context(
            principal,
            charts=[
                pending_by_age(principal, oversight, now),
                approvals_per_day(principal, oversight, now),
                failures_per_day(principal, oversight, now),
            ],
            failing=[v for v in failing[:200] if oversight.sees(v)][:20],
        ),
    )
