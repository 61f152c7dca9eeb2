"""The API's representations (docs/api.md) as TypedDicts: answers stay plain JSON dicts, so a
field the server adds later never breaks a caller, and mypy still checks every key read.

Members the contract lists are required; members the server adds beyond it are
``NotRequired`` so an older or newer server still type-checks."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Generic, Literal, NotRequired, TypedDict, TypeVar

T = TypeVar("T")

# Times may be given as aware datetimes (sent as RFC 3339 UTC with ``Z``) or as strings.
Time = str | datetime

SourceKind = Literal["message", "business_record", "approval_record", "document"]
MemoryKind = Literal["preference", "task_fact", "enterprise_rule"]
MemoryStatus = Literal[
    "pending_review",
    "held_unresolved",
    "checking",
    "checks_failed",
    "active",
    "rejected",
    "superseded",
    "retired",
    "expired",
]
Verification = Literal["asserted", "confirmed", "verified_record"]
Assertion = Literal["state", "plan"]
InFlight = Literal["reverify", "continue"]


class Page(TypedDict, Generic[T]):
    results: list[T]
    next: str | None


# --- Sources -------------------------------------------------------------------------


class SourceInput(TypedDict):
    kind: SourceKind
    content: str
    external_ref: NotRequired[str]
    version: NotRequired[str]
    speaker: NotRequired[str]
    occurred_at: NotRequired[Time | None]
    visibility: NotRequired[list[str]]
    metadata: NotRequired[dict[str, Any]]


class Source(TypedDict):
    id: str
    kind: SourceKind
    content: str
    content_sha256: str
    external_ref: str | None
    version: str | None
    speaker: str | None
    occurred_at: str | None
    received_at: str
    visibility: list[str]
    metadata: dict[str, Any]
    revoked_at: str | None


class SourceRevocation(TypedDict):
    source: str
    memories: list[str]
    revoked_at: NotRequired[str | None]


# --- Entities ------------------------------------------------------------------------


class Entity(TypedDict):
    id: str
    kind: str
    name: str
    aliases: list[str]
    external_ref: str | None
    created_at: NotRequired[str]


class MatchCandidate(TypedDict):
    id: str
    kind: str
    name: str
    # name, alias, name_token, alias_token, alias_prefix; newer servers also
    # transliteration and semantic (never a match on their own)
    matched_on: str


class EntityMatch(TypedDict):
    decision: Literal["matched", "ambiguous", "none"]
    candidates: list[MatchCandidate]


class ExportDocument(TypedDict):
    """``GET /entities/{id}/export`` (docs/api.md, Retention and erasure)."""

    entity: Entity
    aliases: NotRequired[list[Any]]
    memories: NotRequired[list[Any]]
    sources: NotRequired[list[Any]]
    retrievals: NotRequired[list[Any]]
    audit: NotRequired[list[Any]]


class ErasureStarted(TypedDict):
    erasure: str


class ErasureKept(TypedDict):
    source: str
    also_cited_for: list[str]


class Erasure(TypedDict):
    status: Literal["running", "done", "failed"]
    counts: dict[str, int]
    kept: list[ErasureKept]


# --- Memories ------------------------------------------------------------------------


class Scenario(TypedDict):
    kind: Literal["applicable", "inapplicable", "revoked"]
    context: NotRequired[dict[str, str]]
    valid_at: NotRequired[Time | None]
    expect: Literal["applies", "does_not_apply"]


class ScenarioRemoved(TypedDict):
    by: str
    reason: str
    at: str


class AddedScenario(TypedDict):
    id: int
    kind: str
    context: dict[str, str]
    valid_at: str | None
    expect: str
    created_by: NotRequired[str]
    version: NotRequired[int]
    removed: NotRequired[ScenarioRemoved | None]


class ScenarioList(TypedDict):
    results: list[AddedScenario]


class Basis(TypedDict, total=False):
    ref: str
    version: str


class _VersionOptions(TypedDict, total=False):
    valid_from: Time | None
    valid_to: Time | None
    assertion: Assertion
    sources: list[str]
    basis: Basis | dict[str, Any]
    visibility: list[str]
    required_reviewers: list[str]
    scenarios: list[Scenario]


class ValueOption(TypedDict):
    value: Any
    label: NotRequired[str]


class Proposal(_VersionOptions):
    """``POST /memories``: ``subject``, or ``subject_mention`` while the entity is unknown;
    ``value``, or ``value_mention`` ("there") with optional ``value_options`` while the
    value is unclear; ``expires_at`` may be left out only when the field catalog gives the
    field a default expiry."""

    kind: MemoryKind
    field: str
    value: NotRequired[Any]
    statement: str
    scope: dict[str, str]
    owner: str
    expires_at: NotRequired[Time | None]
    subject: NotRequired[str]
    subject_mention: NotRequired[str]
    value_mention: NotRequired[str]
    value_options: NotRequired[list[ValueOption]]
    value_is_literal: NotRequired[bool]  # "it" as said (the ISO code), never a pointer


class Correction(_VersionOptions, total=False):
    """A correction's body: what is omitted is copied from the head version."""

    value: Any
    statement: str
    scope: dict[str, str]
    owner: str
    expires_at: Time | None


class Approval(TypedDict):
    reviewer: str
    decision: Literal["approve", "reject"]
    comment: str
    at: str


class ChecksSummary(TypedDict):
    status: Literal["none", "running", "passed", "failed"]
    passed: int
    failed: int
    total: int
    # The run the counts are from and when it ran (null before any run).
    run: NotRequired[Literal["preview", "gate", "revalidation"] | None]
    ran_at: NotRequired[str | None]


class Memory(TypedDict):
    """The lineage's head version (or, from ``versions``, one version)."""

    id: str
    version: int
    active_version: int | None
    kind: MemoryKind
    subject: str | None
    subject_mention: NotRequired[str | None]
    field: str
    value: Any
    statement: str
    scope: dict[str, str]
    owner: str
    proposed_by: str
    expires_at: str | None
    valid_from: str | None
    valid_to: str | None
    assertion: Assertion
    verification: Verification
    status: MemoryStatus
    sources: list[str]
    basis: dict[str, Any]
    visibility: list[str]
    required_reviewers: NotRequired[list[str]]
    recorded_at: str
    activated_at: str | None
    deactivated_at: str | None
    approvals: list[Approval]
    approvals_required: int
    checks: ChecksSummary
    # Why the version is in its status (a hold, a rejection, a suspension), when known.
    status_reason: NotRequired[str | None]
    # The open question of a held proposal (docs/api.md, Clarification); null once answered.
    needs_clarification: NotRequired[Clarification | None]


class ClarificationOption(TypedDict):
    id: str  # an entity id (subject) or opt_<n> (value)
    label: str
    matched_on: NotRequired[str]
    value: NotRequired[Any]
    memory_id: NotRequired[str | None]


class Clarification(TypedDict):
    member: Literal["subject", "value"]
    mention: str
    question: str
    options: list[ClarificationOption]
    asked_at: str
    remaining: int
    answer_with: NotRequired[str]


class Retirement(TypedDict):
    memory: Memory
    flagged_tasks: list[str]


class CheckResult(TypedDict):
    scenario: dict[str, Any]
    generated: bool
    outcome: Literal["passed", "failed"]
    detail: str
    policy_version: str
    ran_at: str
    run: NotRequired[str]
    impact: NotRequired[Any]
    version: NotRequired[int]


# --- Resolve and tasks ---------------------------------------------------------------


class Fact(TypedDict):
    field: str
    value: Any
    memory_id: str
    version: int
    kind: MemoryKind
    scope: dict[str, str]
    verification: Verification
    valid_from: str | None
    valid_to: str | None
    expires_at: str | None
    sources: list[str]
    basis: dict[str, Any]
    pending_correction: bool
    qualifiers: list[str]
    reason: str
    statement: NotRequired[str]
    # Only on a fact of a field whose committed state another system holds: memory
    # remembers, the system of record decides (docs/api.md, Field catalog).
    advisory: NotRequired[bool]
    authoritative_system: NotRequired[AuthoritativeSystem]


class Abstention(TypedDict):
    field: str
    reason: Literal["conflict", "not_valid_at_time", "no_applicable_fact"] | str
    detail: str


class Plan(TypedDict):
    field: str
    value: Any
    memory_id: str
    version: int
    valid_from: str | None
    statement: str


class Considered(TypedDict):
    memory_id: str
    version: int
    outcome: str
    field: NotRequired[str]


class Resolution(TypedDict):
    policy_version: str
    valid_at: str
    known_at: str
    retrieval_id: str | None
    facts: list[Fact]
    abstentions: list[Abstention]
    plans: list[Plan]
    considered: NotRequired[list[Considered]]


class TaskUse(TypedDict):
    memory_id: str
    version: int
    field: str
    retrieved_at: str
    status_now: MemoryStatus
    retrieval_id: NotRequired[str]


class TaskReason(TypedDict):
    memory_id: str
    event: Literal["retired", "expired", "superseded"] | str
    at: str
    reason: str
    version: NotRequired[int]


class TaskCheck(TypedDict):
    task_id: str
    used: list[TaskUse]
    needs_reverification: bool
    reasons: list[TaskReason]


# --- Policy --------------------------------------------------------------------------


class Policy(TypedDict):
    version: str
    precedence: dict[str, Any]
    published_at: str | None
    published_by: NotRequired[str]
    reason: NotRequired[str]


class PublishedPolicy(Policy):
    revalidation: str


class RevalidationStarted(TypedDict):
    revalidation: str


class Revalidation(TypedDict):
    status: Literal["running", "done"]
    total: int
    done: int
    failed: int
    flagged: list[str]
    id: NotRequired[str]
    reason: NotRequired[str]
    policy_version: NotRequired[str]
    started_at: NotRequired[str | None]
    finished_at: NotRequired[str | None]


# --- Audit ---------------------------------------------------------------------------


class AuditEvent(TypedDict):
    seq: int
    at: str
    actor: str
    action: str
    target_type: str
    target_id: str
    data: dict[str, Any]
    prev_hash: str
    hash: str
    key_id: NotRequired[str | None]  # the HMAC's key; null for a plain link (newer servers)


class AuditVerification(TypedDict):
    ok: bool
    events_checked: int
    first_bad_seq: int | None
    # Newer servers: why it failed, where keying starts, and keys it could not find.
    reason: NotRequired[Literal["link", "hash", "head", "unbound", "seal", "key_missing"] | None]
    keyed_from: NotRequired[int | None]
    missing_key_ids: NotRequired[list[str]]


# --- Webhooks ------------------------------------------------------------------------

WebhookEvent = Literal[
    "memory.pending_review",
    "memory.activated",
    "memory.checks_failed",
    "memory.rejected",
    "memory.retired",
    "memory.expired",
    "source.revoked",
    "task.needs_reverification",
    "revalidation.finished",
    "subject.erased",
]


class Webhook(TypedDict):
    id: str
    url: str
    events: list[str]
    description: NotRequired[str]
    secret: NotRequired[str]  # only in the answers that create or rotate it


class WebhookEnabled(Webhook):
    status: str
    held_released: int  # events held while disabled, now sent oldest first
    held_dropped: int  # held longer than the server's retention: never sent


class WebhookDelivery(TypedDict):
    id: NotRequired[str]
    event: NotRequired[str]
    status_code: NotRequired[int | None]
    latency_ms: NotRequired[int | None]
    at: NotRequired[str]


class WebhookPayload(TypedDict):
    """A delivery's body: ids, statuses and reasons, never values or content."""

    type: str
    timestamp: str
    data: dict[str, Any]


# --- Health --------------------------------------------------------------------------


class Health(TypedDict):
    status: str
    checked: NotRequired[list[str]]
    failing: NotRequired[str]


# --- Field catalog (docs/api.md, Field catalog) ---------------------------------------


class AuthoritativeSystem(TypedDict):
    name: str
    url: str | None
    tool: str | None


class FieldEntry(TypedDict):
    name: str
    description: str
    value_schema: dict[str, Any]
    kinds: list[MemoryKind]
    required_scope: list[str]
    default_expiry_days: int | None
    authoritative_system: AuthoritativeSystem | None
    updated_by: str
    updated_at: str


class FieldList(TypedDict):
    results: list[FieldEntry]


# --- Context (docs/api.md, Context) --------------------------------------------------


class ContextSubject(TypedDict):
    given: str
    id: str | None
    name: str | None
    decision: Literal["id", "matched", "ambiguous", "none"]


class ContextFact(Fact):
    subject: str
    subject_name: str
    committed: NotRequired[bool]  # false on an advisory value: read the system of record


class ContextAsk(TypedDict):
    subject: str | None
    field: str | None
    reason: str
    ask: str  # the question to ask instead of guessing
    mention: NotRequired[str]
    detail: NotRequired[str]
    options: NotRequired[list[dict[str, Any]]]


class ContextPending(TypedDict):
    subject: str
    field: str
    memory_id: str
    version: int
    status: MemoryStatus
    statement: str
    effect: Literal["may_replace", "may_answer"]
    replaces: str | None


class ContextPlan(Plan):
    subject: str


class ContextCut(TypedDict):
    section: Literal["ask", "advisory", "facts", "pending", "plans", "note"]
    subject: str | None
    field: str | None
    memory_id: str | None
    tokens: int


class ContextTokens(TypedDict):
    budget: int
    used: int  # an exact count in ``encoding``, never above ``budget``
    encoding: Literal["cl100k_base", "o200k_base"]
    estimator: str


class ContextBlock(TypedDict):
    purpose: Literal["answer", "action"]
    context: dict[str, str]
    policy_version: str
    retrieval_id: str | None
    subjects: list[ContextSubject]
    ask: list[ContextAsk]
    advisory: list[ContextFact]
    facts: list[ContextFact]
    pending: list[ContextPending]
    plans: list[ContextPlan]
    cut: list[ContextCut]
    tokens: ContextTokens
    text: str


# --- Search and the agents' reads (docs/api.md, Search, Proposals, Entities) -----------


class SearchResult(TypedDict):
    """A candidate, never an answer: resolve its subject before using a fact."""

    type: Literal["entity", "memory", "source"]
    id: str
    kind: str
    statement: str
    status: str
    matched: list[str]
    score: float
    name: NotRequired[str]  # entity
    external_ref: NotRequired[str | None]  # entity, source
    version: NotRequired[int]  # memory
    subject: NotRequired[str | None]  # memory
    field: NotRequired[str]  # memory
    references: NotRequired[list[str]]  # memory


class SearchPage(Page[SearchResult]):
    # Newer servers: "all" when the candidates have every word of ``q``, "some" when
    # none had and they are ranked by the words that match and, where the server reads
    # by meaning, by how near they are ("semantic" in a result's ``matched``).
    match: NotRequired[Literal["all", "some"]]


class EntityFact(Memory):
    relation: Literal["subject", "referenced"]


class ProposalState(TypedDict):
    """One of the caller's own proposals (``GET /proposals``) and why it is where it is."""

    memory_id: str
    version: int
    kind: MemoryKind
    subject: str | None
    subject_mention: str | None
    field: str
    statement: str
    status: MemoryStatus
    in_use: bool
    reasons: list[str]
    recorded_at: str
    status_changed_at: str


class EntityKind(TypedDict):
    kind: str
    entities: int


class EntityKinds(TypedDict):
    kinds: list[EntityKind]


class ExternalRefMatch(TypedDict):
    decision: Literal["matched", "ambiguous", "none"]
    candidates: list[Entity]
