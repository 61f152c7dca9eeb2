"""What a memory's state means, in words, for one reader (issue 43, points 9 and 12).

The emails and the owner's page say the same things the same way: why a memory was
retired ("its source business record C-12 was revoked: contract ended", never a
``src_`` id), what its checks found, who else must decide it, and what it corrects. Each
sentence is written for one reader and names only what that reader may see
(``core.authority.version_visible``, the rule the API applies)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from django.contrib.auth.models import User

from approvals.explain import failure_sentence, latest_deciding, statements_for
from approvals.models import CheckResult
from core import authority
from core.principals import Principal
from memory.models import MemoryVersion, Source, Status

REVOKED = re.compile(r"^source (?P<source>src_\w+) revoked: (?P<reason>.*)$", re.DOTALL)
PUBLISHED = re.compile(r"^policy (?P<policy>\S+) published: (?P<reason>.*)$", re.DOTALL)
EXPIRED = "expires_at passed"


def kind_words(kind: str) -> str:
    return kind.replace("_", " ")  # "business_record": "business record"


def sees(reader: Principal | None, version: MemoryVersion) -> bool:
    return reader is not None and authority.version_visible(version, reader)


def reason_words(version: MemoryVersion, reader: Principal | None) -> str:
    """The stored reason of the version's last status change as a person says it: a
    revocation names the source by its kind and reference (and the revoker's reason) for a
    reader who may see the memory, and only that "one of its sources" was revoked for
    anyone else."""
    reason = version.status_reason
    revoked = REVOKED.match(reason)
    if revoked is not None:
        if not sees(reader, version):
            return "one of its sources was revoked"
        source = Source.objects.filter(
            tenant_id=version.tenant_id, pk=revoked.group("source")
        ).first()
        said = revoked.group("reason").strip()
        why = f": {said}" if said else ""
        if source is None:
            return f"one of its sources was revoked{why}"
        kind = kind_words(source.kind)
        if source.external_ref:
            return f"its source {kind} {source.external_ref} was revoked{why}"
        return f"its source, {_with_article(kind)}, was revoked{why}"
    if reason == EXPIRED:
        return "it reached its expiry date"
    published = PUBLISHED.match(reason)
    if published is not None:
        said = published.group("reason").strip()
        return f"policy version {published.group('policy')} was published" + (
            f" ({said})" if said else ""
        )
    return reason


def _with_article(noun: str) -> str:
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def _latest_run(results: Sequence[CheckResult]) -> tuple[str, list[CheckResult]]:
    """The run the status tells (the last gate or revalidation run; before any, the last
    preview), with its name as a reader says it."""
    deciding = latest_deciding(results)
    if deciding:
        return "Checks", deciding
    previews = sorted(
        (r for r in results if r.run == CheckResult.Run.PREVIEW), key=lambda r: r.ran_at
    )
    if not previews:
        return "Preview checks", []
    last = previews[-1].policy_version
    return "Preview checks", [r for r in previews if r.policy_version == last]


def check_words(version: MemoryVersion, reader: Principal | None) -> str:
    """ "Preview checks: all 8 passed." / "Preview checks: 1 of 8 failed. “…” failed its
    checks: it ties with “…”." — for a version in review or whose checks failed; the
    failure sentence only for a reader who may see the memory."""
    if version.status == Status.CHECKING:
        return "Checks: running now; it becomes active when they pass."
    if version.status not in (Status.PENDING_REVIEW, Status.CHECKS_FAILED):
        return ""  # in use or ended: its checks are history, on its page
    name, results = _latest_run(list(version.checks.all()))
    if not results:
        if version.status == Status.PENDING_REVIEW:
            return f"{name}: not finished yet; its page shows them when they are."
        return ""
    failed = [r for r in results if r.outcome == CheckResult.Outcome.FAILED]
    if not failed:
        return f"{name}: all {len(results)} passed."
    counted = f"{name}: {len(failed)} of {len(results)} failed."
    if version.status == Status.CHECKS_FAILED or not sees(reader, version):
        return counted  # a failure's own email and page say why, once
    return f"{counted} {failure_sentence(version, results, statements_for(reader, version))}"


def correction_words(version: MemoryVersion, reader: Principal | None) -> str:
    """What this version corrects: the one before it, by its statement and value when the
    reader may see it."""
    if version.number <= 1:
        return ""
    previous = MemoryVersion.objects.filter(
        item_id=version.item_id, number=version.number - 1
    ).first()
    if previous is None:
        return ""
    if not sees(reader, previous):
        return f"It corrects version {previous.number}, which you may not see."
    was = _value_text(previous.value)
    now = _value_text(version.value)
    change = f" (value {was} → {now})" if was != now else ""
    return f"It corrects version {previous.number}: “{previous.statement}”{change}."


def _value_text(value: Any) -> str:
    return f"“{value}”" if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def decider_words(version: MemoryVersion, reader: User) -> str:
    """Who else must decide a version in review, for one reviewer: "lena must decide too."
    or "One more approval is needed besides yours, from lena or omar.", with who already
    approved. Names only: who may decide is ``core.authority``'s one rule."""
    if version.status != Status.PENDING_REVIEW:
        return ""
    approved = [
        a.reviewer.get_username()
        for a in version.approvals.filter(decision="approve").select_related("reviewer")
    ]
    deciders = authority.reviewers_for([version])[version.pk]
    others = [
        u.get_username() for u in deciders if u.pk != reader.pk and u.get_username() not in approved
    ]
    mine = 0 if reader.get_username() in approved else 1
    remaining = version.approvals_required - len(approved) - mine
    parts = []
    if approved:
        parts.append(f"Approved so far by {_and(approved)}.")
    if remaining <= 0:
        parts.append("Your approval is the last one it needs.")
    elif len(others) == remaining:
        parts.append(f"{_and(others)} must decide too.")
    elif len(others) > remaining:
        more = "One more approval is" if remaining == 1 else f"{remaining} more approvals are"
        parts.append(f"{more} needed besides yours, from {_or(others)}.")
    else:
        parts.append(
            f"It needs {remaining} more approval{'s' if remaining > 1 else ''} besides yours, "
            f"but {'nobody else' if not others else _and(others) + ' alone'} may give "
            "one: a tenant admin must grant someone review authority."
        )
    return " ".join(parts)


def _and(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _or(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
