"""Failed checks in plain words, for people: the check table's "why", and the one sentence
the item's status line and the checks-failed email give (issue 37). The engine's detail
("custom #1 (user:rita): selected (expected does not apply): mem_… v1 …") stays in the
stored result and the audit log; people read statements, never ids."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from approvals.models import CheckResult
from core.authority import version_visible
from core.principals import Principal
from memory.models import MemoryVersion

DECIDING_RUNS = (CheckResult.Run.GATE, CheckResult.Run.REVALIDATION)


def _where(context: Mapping[str, Any]) -> str:
    if not context:
        return "with no context"
    return "where " + ", ".join(f"{dim} is {value}" for dim, value in sorted(context.items()))


def _custom_must(scenario: Mapping[str, Any]) -> tuple[str, str]:
    """(what the scenario's author says, what happened instead) — from the expectation,
    so a scenario that says "must not apply" reads "but it does" (never "it does not")."""
    if scenario.get("expect") == "applies":
        return "must apply", "but agents asking there would not be told it"
    return "must not apply", "but agents asking there would be told it"


def why_failed(scenario: Mapping[str, Any], *, tied: bool = False) -> str:
    """One sentence: why this check failed, and what the reviewer or owner can do.
    ``tied``: the same run found a tie, which is then why its own scope gets no answer."""
    name = str(scenario.get("name", ""))
    kind = scenario.get("kind")
    if tied and name == "applicable: its own scope":
        return (
            "Agents asking in its own scope would get no answer while it ties with the "
            "other memory: what fixes the tie fixes this too, not a correction."
        )
    if kind == "regression":
        return (
            "It ties with the other memory: two equally ranked memories with different "
            "values in that context, so agents would get no answer there. What fixes it is "
            "replacing the older one with this one (a reviewer who may retire it does both "
            "in one step), or retiring the older one and running the checks again."
        )
    if name == "applicable: its own scope":
        return (
            "Agents asking in its own scope would not be given it (a stronger memory wins "
            "there, or it is not valid now): the owner can correct its scope or validity, "
            "or a reviewer can retire the memory that outranks it."
        )
    if name.startswith("inapplicable: ") and name.endswith("moved to a sibling"):
        return (
            "It would also answer where that dimension has another value, so its scope is "
            "wider than it claims: the owner can correct the scope; reviewers should not "
            "approve it as it is."
        )
    if name in ("inapplicable: another subject", "inapplicable: another tenant"):
        return (
            "It reached another subject or tenant, which is a defect of the candidate "
            "query, not of this item: report it to the operators and do not activate it."
        )
    if name == "inapplicable: outside its validity":
        return (
            "It would answer outside its valid time: the owner can correct valid_from or "
            "valid_to in a new version."
        )
    if kind == "revoked":
        return (
            "Withdrawing its basis would not cleanly withdraw it (another item cites the "
            "same record, or it stays in use): a reviewer can check the other item citing "
            "the record; the owner can cite the record this claim alone rests on."
        )
    if kind == "visibility":
        return (
            "A principal without its labels would be given it, because the labels of a "
            "source changed: run the checks again; if it still fails, ask whoever changed "
            "the source's visibility."
        )
    must, instead = _custom_must(scenario)
    return (
        f"A scenario added from a real case says it {must} in this context, {instead}: "
        "the owner can correct its scope or validity in a new version, or, if the scenario "
        "is wrong, a reviewer can reject this version and discuss it with the author."
    )


StatementOf = Callable[[str], str | None]


def _what_happened(scenario: Mapping[str, Any], statement_of: StatementOf) -> str:
    """The failure as a clause, naming the other memory by its statement."""
    name = str(scenario.get("name", ""))
    kind = scenario.get("kind")
    where = _where(scenario.get("context") or {})
    if kind == "regression":
        other = statement_of(str(scenario.get("regression_of") or ""))
        named = f"“{other}”" if other else "another memory you may not see"
        return f"it ties with {named} {where}, so agents would get no answer there"
    if name == "applicable: its own scope":
        return f"agents asking in its own scope ({where}) would not be told it"
    if name.startswith("inapplicable: ") and name.endswith("moved to a sibling"):
        return f"it would also answer {where}, outside the scope it claims"
    if name in ("inapplicable: another subject", "inapplicable: another tenant"):
        return "it reached " + name.removeprefix("inapplicable: ")
    if name == "inapplicable: outside its validity":
        return "it would answer outside its valid time"
    if kind == "revoked":
        return "withdrawing its source would not cleanly withdraw it"
    if kind == "visibility":
        return "someone without its labels would be told it"
    author = name.partition("(")[2].rstrip(")").removeprefix("user:").replace(":", " ", 1)
    must, instead = _custom_must(scenario)
    return f"a scenario added by {author or 'a reviewer'} says it {must} {where}, {instead}"


def is_tie(result: CheckResult) -> bool:
    return result.outcome == CheckResult.Outcome.FAILED and result.scenario.get("kind") == (
        "regression"
    )


def failures(results: Iterable[CheckResult]) -> list[CheckResult]:
    """The failed results, a tie first: a tie also fails "applicable: its own scope" (no
    answer there), and what fixes it is the tie, not the scope (issue 43)."""
    failed = [r for r in results if r.outcome == CheckResult.Outcome.FAILED]
    return sorted(failed, key=lambda r: not is_tie(r))


def failure_clauses(results: Iterable[CheckResult], statement_of: StatementOf) -> list[str]:
    """Each failure as a clause ("it ties with “…” where …"), a tie first."""
    return [_what_happened(r.scenario, statement_of) for r in failures(results)]


def tied_statements(results: Iterable[CheckResult], statement_of: StatementOf) -> list[str]:
    """The statements of the memories it ties with, as this reader may see them."""
    named = []
    for result in results:
        if is_tie(result):
            other = statement_of(str(result.scenario.get("regression_of") or ""))
            named.append(other or "another memory you may not see")
    return named


def failure_sentence(
    version: MemoryVersion, results: Sequence[CheckResult], statement_of: StatementOf
) -> str:
    """One plain sentence for the latest deciding run's failures ("" when none failed)."""
    failed = failures(results)
    if not failed:
        return ""
    first = _what_happened(failed[0].scenario, statement_of)
    sentence = f"“{version.statement}” failed its checks: {first}."
    others = len(failed) - 1
    if others:
        sentence += f" {others} other check{'s' if others > 1 else ''} failed too."
    return sentence


def latest_deciding(results: Iterable[CheckResult]) -> list[CheckResult]:
    """The results of the last gate or revalidation run (one run, one policy version)."""
    deciding = sorted((r for r in results if r.run in DECIDING_RUNS), key=lambda r: r.ran_at)
    if not deciding:
        return []
    last = deciding[-1]
    return [r for r in deciding if (r.run, r.policy_version) == (last.run, last.policy_version)]


def latest_preview(results: Iterable[CheckResult]) -> list[CheckResult]:
    """The results of the last preview run (one policy version)."""
    previews = sorted(
        (r for r in results if r.run == CheckResult.Run.PREVIEW), key=lambda r: r.ran_at
    )
    if not previews:
        return []
    last = previews[-1].policy_version
    return [r for r in previews if r.policy_version == last]


def statements_for(principal: Principal | None, version: MemoryVersion) -> StatementOf:
    """Item id → its head statement, or None when the reader may not see it."""

    def statement_of(item_id: str) -> str | None:
        other = (
            MemoryVersion.objects.filter(tenant_id=version.tenant_id, item_id=item_id)
            .order_by("-number")
            .first()
        )
        if other is None or principal is None or not version_visible(other, principal):
            return None
        return other.statement

    return statement_of


def failure_for(principal: Principal | None, version: MemoryVersion) -> str:
    """The sentence for one reader: the statements they may see, "another memory" else."""
    return failure_sentence(
        version, latest_deciding(version.checks.all()), statements_for(principal, version)
    )


def ties_for(principal: Principal | None, version: MemoryVersion) -> list[str]:
    """The statements (as this reader may see them) of the memories the latest deciding
    run found it ties with: the email then names replacing as the fix, not a correction."""
    return tied_statements(
        latest_deciding(version.checks.all()), statements_for(principal, version)
    )
