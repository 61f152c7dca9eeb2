"""What a memory's state means, in words, for one reader (issue 43, points 9 and 12).

The emails and the owner's page say the same things the same way: why a memory was
retired ("its source business record C-12 was revoked: contract ended", never a
``src_`` id), what its checks found, who else must decide it, and what it corrects. Each
sentence is written for one reader and names only what that reader may see
(``core.authority.version_visible``, the rule the API applies)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

from django.contrib.auth.models import User

from approvals.explain import (
    failure_clauses,
    failure_sentence,
    failures,
    is_tie,
    latest_deciding,
    latest_preview,
    statements_for,
)
from approvals.models import CheckResult
from core import authority
from core.principals import Principal
from memory import clarifications
from memory.models import Clarification, MemoryVersion, Source, Status

REVOKED = re.compile(r"^source (?P<source>src_\w+) revoked: (?P<reason>.*)$", re.DOTALL)
PUBLISHED = re.compile(r"^policy (?P<policy>\S+) published: (?P<reason>.*)$", re.DOTALL)
EXPIRED = "expires_at passed"
# A memory's id as the check engine writes it, with the version it names if any.
MEMORY_ID = re.compile(r"\bmem_[0-9a-z]+(?: v\d+)?")
UNSEEN = "another memory you may not see"


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


# --- a proposal's reasons, for the agent or person who proposed it (issue 44, point 10) ---


def proposal_reasons(version: MemoryVersion, reader: Principal) -> list[str]:
    """Why a proposal is where it is, each reason saying what happens next and what the
    proposer can do, naming only memories and values ``reader`` may see. Expects
    ``versions_with_details`` (approvals and checks prefetched)."""
    approvals = list(version.approvals.all())
    rejections = [a for a in approvals if a.decision == "reject"]
    reasons = [said] if (said := _status_said(version, reader, rejections)) else []
    for rejection in rejections:
        comment = f": {rejection.comment}" if rejection.comment else ""
        reasons.append(f"rejected by {rejection.reviewer.get_username()}{comment}")
    status = version.status
    if status == Status.HELD_UNRESOLVED:
        reasons.extend(_questions_said(version, reader))
    elif status == Status.PENDING_REVIEW:
        approved = sum(1 for a in approvals if a.decision == "approve")
        waiting = max(version.approvals_required - approved, 1)
        reasons.append(
            f"waiting for {waiting} more approval(s) from a reviewer; then its checks run "
            "and it becomes active. Nothing to do meanwhile (correct_memory if it is wrong)"
        )
        reasons.extend(
            f"its preview checks found: {clause}"
            for clause in _failures_said(version, reader, latest_preview(version.checks.all()))
        )
    elif status == Status.CHECKING:
        reasons.append(
            "scenario checks are running: it becomes active if they pass; nothing to do meanwhile"
        )
    elif status == Status.CHECKS_FAILED:
        failed = _failures_said(version, reader, latest_deciding(version.checks.all()))
        reasons.extend(f"its checks failed: {clause}" for clause in failed)
        reasons.append(
            "it is not used as it is: correct it (correct_memory) and its checks run "
            "again, or a reviewer rejects it"
        )
    elif status == Status.REJECTED:
        reasons.append(
            "it will not be used: if the claim still holds, propose it again "
            "(propose_memory) with what the reviewer asked for"
        )
    return reasons


def _status_said(version: MemoryVersion, reader: Principal, rejections: Sequence[Any]) -> str:
    """The stored reason of the last status change in words, when it adds something: a
    rejection's comment is said once (with its reviewer) and the check engine's detail
    never (the failures are said in words)."""
    reason = version.status_reason
    if not reason or version.status in (Status.CHECKS_FAILED, Status.HELD_UNRESOLVED):
        return ""
    if version.status == Status.REJECTED:
        return "" if rejections else f"rejected: {reason}"
    return reason_words(version, reader)


def _questions_said(version: MemoryVersion, reader: Principal) -> list[str]:
    """Each open question with the answers the reader may give (subject first)."""
    said = []
    questions = getattr(version, "open_clarifications", None)  # a list's prefetch
    if questions is None:
        questions = list(clarifications.open_questions(version))
    for question in questions:
        mention = question.mention
        if question.member == Clarification.Member.SUBJECT:
            options = ", ".join(f"{o['id']} ({o['label']})" for o in question.options)
            if options:
                said.append(
                    f"held: which entity does “{mention}” mean? Answer with clarify: "
                    f"{options} (or a reviewer links it)"
                )
            else:
                said.append(
                    f"held: no entity is named “{mention}”: create it (create_entity) and "
                    "answer with clarify and its id (or a reviewer links it)"
                )
            continue
        field = version.field
        options = ", ".join(
            f"{o.body['id']} {_value_text(o.body['value'])}"
            for o in clarifications.readable_options(reader, question.options)
        )
        if options:
            said.append(
                f"held: which {field} does “{mention}” mean? Answer with clarify: {options}"
            )
        elif clarifications.waits_for_subject(question, version):
            said.append(
                f"held: which {field} “{mention}” means is asked once the subject is answered, "
                "with the values in use for it"
            )
        else:
            said.append(
                f"held: no {field} you may see is one “{mention}” could mean: correct the "
                "memory with the value itself (correct_memory)"
            )
    return said


def _failures_said(
    version: MemoryVersion, reader: Principal, results: Sequence[CheckResult]
) -> list[str]:
    """Each failure of one run as a clause with what the proposer can do: a tie names the
    memory it ties with (id, value or statement) only to a reader who may see it. A tie
    also fails "applicable: its own scope", which the tie explains, so that is not said."""
    failed = failures(results)
    if not failed:
        return []
    ties = [r for r in failed if is_tie(r)]
    said = [_tie_said(version, reader, str(r.scenario.get("regression_of") or "")) for r in ties]
    rest = [r for r in failed if not is_tie(r)]
    own = [r for r in rest if r.scenario.get("name") == "applicable: its own scope"]
    if own and not ties and (duplicate := _duplicate_said(version, reader)):
        said.append(duplicate)  # it says what the own-scope failure means and what to do
        ties = own
    if ties:
        rest = [r for r in rest if r.scenario.get("name") != "applicable: its own scope"]
    said.extend(failure_clauses(rest, statements_for(reader, version)))
    return said


def _duplicate_said(version: MemoryVersion, reader: Principal) -> str:
    """A memory in use for the same subject, field and scope with the same value is why
    agents asking in this one's scope are not told it: the proposer should correct that
    memory, named as the reader may see it (docs/api.md, a proposal's reasons)."""
    others = MemoryVersion.objects.filter(
        tenant_id=version.tenant_id,
        subject_id=version.subject_id,
        field=version.field,
        status=Status.ACTIVE,
    ).exclude(item_id=version.item_id)
    same = [o for o in others if o.scope == version.scope and o.value == version.value]
    if not same:
        return ""
    other = min(same, key=lambda o: o.item_id)
    head = MemoryVersion.objects.filter(item_id=other.item_id).order_by("-number").first()
    if not (sees(reader, other) and head is not None and sees(reader, head)):
        return (
            f"{UNSEEN} already holds this value for this scope, so this one would never be "
            "used: nothing to add; a reviewer rejects it"
        )
    return (
        f"{other.item_id} already holds {_value_text(other.value)} for this scope: propose a "
        f"correction of {other.item_id} (correct_memory) instead of a new memory"
    )


# --- what a reader is told of other memories by id (issue 44: no hidden memory's id) ---


def hidden_memories(
    version: MemoryVersion, reader: Principal | None, texts: Iterable[str]
) -> set[str]:
    """The memories ``texts`` name by id, other than the version's own, that ``reader``
    may not see: one whose head or version in use is hidden from them (as
    ``_tie_said``), or that no longer exists."""
    named = {m.split()[0] for text in texts for m in MEMORY_ID.findall(text)}
    named.discard(version.item_id)
    if not named:
        return set()
    seen: dict[str, bool] = {}
    heads: set[str] = set()
    lineage = MemoryVersion.objects.filter(tenant_id=version.tenant_id, item_id__in=named).order_by(
        "item_id", "-number"
    )
    for other in lineage:
        first = other.item_id not in heads
        heads.add(other.item_id)
        if first or other.status == Status.ACTIVE:
            seen[other.item_id] = seen.get(other.item_id, True) and sees(reader, other)
    return {item_id for item_id in named if not seen.get(item_id, False)}


def unnamed(text: str, hidden: set[str]) -> str:
    """``text`` with each hidden memory (and the version it names) said as "another memory
    you may not see"."""
    return MEMORY_ID.sub(lambda m: UNSEEN if m.group(0).split()[0] in hidden else m.group(0), text)


def without_hidden(value: Any, hidden: set[str]) -> Any:
    """A check result's representation with no hidden memory in it: a member that is just
    its id (``regression_of``) becomes null, a text names it "another memory you may not
    see"."""
    if not hidden:
        return value
    if isinstance(value, str):
        return None if value in hidden else unnamed(value, hidden)
    if isinstance(value, list):
        return [without_hidden(v, hidden) for v in value]
    if isinstance(value, dict):
        return {k: without_hidden(v, hidden) for k, v in value.items()}
    return value


def status_reason_for(version: MemoryVersion, reader: Principal) -> str:
    """The stored reason as ``reader`` may read it: unchanged when it names no memory they
    may not see; else failed checks in words (the tie "with another memory you may not
    see"), and any other reason with that memory unnamed."""
    reason = version.status_reason
    if "mem_" not in reason:
        return reason  # no query for the usual reasons
    hidden = hidden_memories(version, reader, [reason])
    if not hidden:
        return reason
    if version.status == Status.CHECKS_FAILED:
        said = _failures_said(version, reader, latest_deciding(version.checks.all()))
        if said:
            return "its checks failed: " + "; ".join(said)
    return unnamed(reason, hidden)


def _tie_said(version: MemoryVersion, reader: Principal, item_id: str) -> str:
    """The memory it ties with, by its id and the value it holds in use, when the reader
    may see that version and its memory's head (as ``clarifications.readable_options``)."""
    lineage = list(
        MemoryVersion.objects.filter(tenant_id=version.tenant_id, item_id=item_id).order_by(
            "-number"
        )
    )
    other = next((v for v in lineage if v.status == Status.ACTIVE), lineage[0] if lineage else None)
    if other is None or not (sees(reader, other) and sees(reader, lineage[0])):
        return (
            "it ties with another memory you may not see, so agents would get no answer "
            "there: a reviewer decides which one holds"
        )
    if other.scope == version.scope:
        return (
            f"{item_id} already holds {_value_text(other.value)} for this scope: propose a "
            f"correction of {item_id} (correct_memory) instead of a new memory"
        )
    where = ", ".join(f"{d} is {v}" for d, v in sorted(other.scope.items())) or "everywhere"
    return (
        f"it ties with “{other.statement}” ({item_id}) where {where}, so agents would get no "
        f"answer there: propose a correction of {item_id} (correct_memory), or narrow this "
        "one's scope"
    )
