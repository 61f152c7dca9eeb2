"""A revalidation chunk reads what its versions need once for all of them (issue 14:
100,000 items revalidated in minutes). The checks must come out exactly as checking each
version alone would, and a suspension inside the chunk must be seen by the versions
checked after it."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from approvals import check_lookups, checks, revalidation
from approvals.models import CheckResult, Revalidation
from memory.models import MemoryVersion, Status
from memory.selectors import current_policy, resolver_policy
from tests.approvals.support import Flow
from tests.conftest import needs

P9 = {"project": "P-9"}


def _active_versions() -> list[MemoryVersion]:
    return list(
        MemoryVersion.objects.filter(status=Status.ACTIVE).select_related("tenant").order_by("pk")
    )


def _a_varied_tenant(flow: Flow) -> None:
    """Ranked rules in one scope, a restricted source, a custom scenario, a task fact, a
    rule with a pending correction and a rule about another subject."""
    flow.active_rule(P9, value="check every delivery")
    record = flow.source("business_record", content="PO-7731 v3: exception granted.")
    flow.active_rule(P9, sources=[record])
    legal = flow.source("approval_record", visibility=["legal", "staff"])
    restricted = flow.rule({"project": "P-10"}, sources=[legal])["id"]
    case = {"kind": "inapplicable", "context": {"project": "P-11"}, "expect": "does_not_apply"}
    flow.ok(flow.post("rita", f"/memories/{restricted}/scenarios", case), 201)
    flow.approve(restricted, "rita", "lena")
    fact = flow.propose("task_fact", {"project": "P-9", "task": "T-1"})["id"]
    flow.approve(fact, "rita")
    corrected = flow.active_rule({"project": "P-12"})
    flow.correct(corrected["id"], corrected["version"], value="check twice")
    flow.subjects["Renewal purchasing"] = flow.subject("Supplier onboarding")
    flow.active_rule(P9)


def _outcomes(versions: list[MemoryVersion], *, chunk: bool) -> list[tuple[object, ...]]:
    now = timezone.now()
    policy = resolver_policy(current_policy(versions[0].tenant))

    def run() -> list[tuple[object, ...]]:
        return [
            (v.item_id, o.spec.name, o.spec.key, o.passed, o.detail, o.impact)
            for v in versions
            for o in checks.run_all(v, policy, now)
        ]

    if not chunk:
        return run()
    with check_lookups.tenant_lookups(versions):
        return run()


def test_a_chunk_checks_every_version_exactly_as_checking_it_alone_does(flow: Flow):
    _a_varied_tenant(flow)
    versions = _active_versions()
    assert len(versions) == 6

    alone, together = _outcomes(versions, chunk=False), _outcomes(versions, chunk=True)

    assert together == alone
    names = {str(name).split(":")[0].split(" #")[0] for _, name, *_ in alone}
    assert {"applicable", "inapplicable", "revoked", "visibility", "regression", "custom"} <= names


@needs("postgres")
def test_a_chunk_reads_its_versions_in_four_queries_then_two_per_version(flow: Flow):
    # The two per version are the scenarios that test the candidate query's own filters
    # (another subject, another tenant): they must run it. The tenant's policy, sibling
    # values and other subjects are read once per chunk (the first pass below).
    _a_varied_tenant(flow)
    versions = _active_versions()

    def check_all() -> None:
        for v in versions:
            checks.run_all(v, check_lookups.current_resolver_policy(v.tenant), timezone.now())

    with CaptureQueriesContext(connection) as prefetch, check_lookups.tenant_lookups(versions):
        reads = len(prefetch)
        check_all()
        with CaptureQueriesContext(connection) as again:
            check_all()

    assert reads == 4  # labels, custom scenarios, active siblings, candidate pools
    assert len(again) == 2 * len(versions)


def test_a_version_checked_after_a_suspension_in_its_chunk_is_checked_without_it(
    flow: Flow,
):
    # The confirmed rule is outranked by the verified one in its own scope: revalidation
    # suspends it. The verified rule, checked next in the same chunk, must no longer list
    # it as a regression to keep resolving, as checking it in its own transaction would.
    shadowed = flow.active_rule(P9, value="check every delivery")["id"]
    record = flow.source("business_record", content="PO-7731 v3: exception granted.")
    stronger = flow.active_rule(P9, sources=[record])["id"]
    with flow.on_commit(execute=False):  # type: ignore[misc]
        started = flow.uncommitted("rita", "/policy/revalidate", {"reason": "prompt changed"})
    job = Revalidation.objects.get(pk=flow.ok(started, 202)["revalidation"])

    revalidation.revalidation_chunk(job_id=job.pk, version_ids=job.version_ids)

    assert flow.memory(shadowed)["status"] == "checks_failed"
    rechecked = CheckResult.objects.filter(
        run=CheckResult.Run.REVALIDATION, version__item_id=stronger
    )
    names = [r.scenario["name"] for r in rechecked]
    assert names and not any(shadowed in name for name in names), names


def test_a_chunk_reads_and_writes_the_jobs_progress_not_its_list_of_versions(flow: Flow):
    # A tenant's job lists every active version (tens of thousands of ids): decoded twice
    # and written back whole by each chunk, it cost more than the chunk's own progress.
    _a_varied_tenant(flow)
    with flow.on_commit(execute=False):  # type: ignore[misc]
        started = flow.uncommitted("rita", "/policy/revalidate", {"reason": "prompt changed"})
    job = Revalidation.objects.get(pk=flow.ok(started, 202)["revalidation"])

    with CaptureQueriesContext(connection) as chunk:
        revalidation.revalidation_chunk(job_id=job.pk, version_ids=job.version_ids)

    # (Statements bound on the server are logged without their text.)
    about_the_job = [sql for q in chunk if '"approvals_revalidation"' in (sql := q["sql"] or "")]
    assert about_the_job and not [sql for sql in about_the_job if "version_ids" in sql]
    job.refresh_from_db()
    assert (job.status, job.done, job.total) == ("done", len(job.version_ids), job.total)
    assert job.finished_at is not None and job.progress_at is not None
