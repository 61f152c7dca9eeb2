"""What the item page and the queue say before a reviewer decides (issue 43, points 2, 4
and 6): the failures of a preview, which must be confirmed before an approval counts;
which run of the checks the page shows, and whether it is still current; the custom
scenarios in force and those removed."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from approvals.explain import failure_clauses, latest_preview, statements_for
from approvals.models import CheckResult, ScenarioRemoval
from core.principals import Principal
from memory.models import MemoryItem, MemoryVersion, Scenario, Status

RUN_WORDS = {
    CheckResult.Run.PREVIEW: "preview",
    CheckResult.Run.GATE: "gate",
    CheckResult.Run.REVALIDATION: "revalidation",
}


def preview_failures(principal: Principal, version: MemoryVersion) -> list[str]:
    """Each failure of the latest preview of a version under review, in words (a tie
    first, naming the other memory by the statement this reviewer may see): what an
    approval must confirm. Empty when the preview passed, has not run, or the version is
    not in review."""
    if version.status != Status.PENDING_REVIEW:
        return []
    return failure_clauses(latest_preview(version.checks.all()), statements_for(principal, version))


def despite_words(failures: list[str]) -> str:
    """The failures as one sentence for a confirmation or a refusal."""
    if not failures:
        return ""
    first = failures[0]
    more = len(failures) - 1
    rest = f"; and {more} other check{'s' if more > 1 else ''} failed" if more else ""
    return f"its preview failed: {first}{rest}."


@dataclass(frozen=True)
class ScenarioRow:
    scenario: Scenario
    removal: ScenarioRemoval | None

    @property
    def removable(self) -> bool:
        """Before activation: the service still decides (409 on a stale page)."""
        return self.removal is None and self.scenario.version.activated_at is None


def scenario_rows(item: MemoryItem, head: MemoryVersion) -> list[ScenarioRow]:
    """The custom scenarios of the lineage up to its head, oldest first, each with its
    removal (who, why, when) if it was removed: in force are those without one."""
    scenarios = list(
        Scenario.objects.filter(version__item=item, version__number__lte=head.number)
        .select_related("version")
        .order_by("pk")
    )
    removals = {r.scenario_id: r for r in ScenarioRemoval.objects.filter(scenario__in=scenarios)}
    return [ScenarioRow(s, removals.get(s.pk)) for s in scenarios]


def current_run(results: list[CheckResult]) -> tuple[str, str, datetime] | None:
    """(run, policy version, when) of the run the status counts (``checks_summary``'s
    rule: the latest gate or revalidation run, else the latest preview)."""
    deciding = [r for r in results if r.run != CheckResult.Run.PREVIEW]
    runs = deciding or results
    if not runs:
        return None
    last = max(runs, key=lambda r: r.ran_at)
    same = [r for r in runs if (r.run, r.policy_version) == (last.run, last.policy_version)]
    return last.run, last.policy_version, max(r.ran_at for r in same)
