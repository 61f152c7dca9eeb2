"""What the review layer holds about an erased subject's versions, cleared in the same
batches as the versions themselves (``memory.erasure``, phase ``versions``): reviewers
write comments freely, and a check result keeps the context it was asked in (a custom
scenario's context may name the person). The outcome, the detail (ids and reasons) and
the scenario's key stay, so what was checked can still be told."""

from __future__ import annotations

from typing import Any

from approvals.models import Approval, CheckResult

COUNTS = ("approval_comments", "check_results")


def erase_reviews(version_ids: list[int]) -> dict[str, int]:
    """Clear the comments on these versions and the contexts of their check results."""
    comments = (
        Approval.objects.filter(version_id__in=version_ids).exclude(comment="").update(comment="")
    )
    changed = []
    for result in CheckResult.objects.filter(version_id__in=version_ids).only(
        "pk", "scenario", "impact"
    ):
        scenario, impact = _without_context(result.scenario), _without_contexts(result.impact)
        if scenario != result.scenario or impact != result.impact:
            result.scenario, result.impact = scenario, impact
            changed.append(result)
    CheckResult.objects.bulk_update(changed, ["scenario", "impact"], batch_size=500)
    return {"approval_comments": comments, "check_results": len(changed)}


def _without_context(entry: Any) -> Any:
    if isinstance(entry, dict) and entry.get("context"):
        return {**entry, "context": {}}
    return entry


def _without_contexts(impact: Any) -> Any:
    return [_without_context(e) for e in impact] if isinstance(impact, list) else impact
