"""``AsyncMemgov``: the asyncio client, method for method the same as ``Memgov``.

Every method returns the server's JSON typed as in ``memgov_client.types`` or raises a
``memgov_client.errors.MemgovError`` subclass."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, TypeVar, Unpack

import httpx

from memgov_client import _ops, _retry
from memgov_client import types as t

T = TypeVar("T")


class AsyncMemgov:
    """``async with AsyncMemgov(base_url, api_key) as memgov: ...``; ``http``, ``transport``
    and ``sleep`` as for ``Memgov``, in their asyncio form."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = 30.0,
        retry: _retry.RetryPolicy | None = None,
        http: httpx.AsyncClient | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.api_key = api_key
        self.retry = retry or _retry.RetryPolicy()
        self._sleep = sleep
        self._http = http or httpx.AsyncClient(
            base_url=base_url.rstrip("/"),
            timeout=timeout,
            transport=transport,
            follow_redirects=False,
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncMemgov:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def _send(self, op: _ops.Op[T]) -> T:
        request = _retry.prepare(op, self.api_key)
        attempt = 0
        while True:
            try:
                response = await self._http.request(
                    request.method,
                    request.url,
                    params=request.params,
                    headers=request.headers,
                    content=request.content,
                )
            except Exception as exc:
                delay = self.retry.delay_after_error(attempt, exc)
                if delay is None:
                    if isinstance(exc, httpx.TransportError):
                        raise _retry.no_answer(exc) from exc
                    raise
            else:
                if response.status_code in op.accept:
                    return op.read(response)
                delay = self.retry.delay_after_response(attempt, response)
                if delay is None:
                    result: T = _retry.outcome(op, response)
                    return result
            await self._sleep(delay)
            attempt += 1

    # --- Sources -----------------------------------------------------------------------

    async def record_source(self, **source: Unpack[t.SourceInput]) -> t.Source:
        """Record evidence (a message, a business or approval record, a document)."""
        return await self._send(_ops.record_source(source))

    async def get_source(self, source_id: str) -> t.Source:
        return await self._send(_ops.get_source(source_id))

    async def revoke_source(self, source_id: str, *, reason: str) -> t.SourceRevocation:
        """Retire every active or pending memory version based on the source."""
        return await self._send(_ops.revoke_source(source_id, reason))

    async def set_source_visibility(
        self, source_id: str, *, visibility: list[str], reason: str
    ) -> t.Source:
        """Change who may see a source and everything built on it (docs/api.md; newer servers)."""
        return await self._send(_ops.set_source_visibility(source_id, visibility, reason))

    # --- Entities ----------------------------------------------------------------------

    async def create_entity(
        self,
        *,
        kind: str,
        name: str,
        aliases: list[str] | None = None,
        external_ref: str | None = None,
    ) -> t.Entity:
        return await self._send(_ops.create_entity(kind, name, aliases, external_ref))

    async def get_entity(self, entity_id: str) -> t.Entity:
        return await self._send(_ops.get_entity(entity_id))

    async def add_alias(self, entity_id: str, *, alias: str, source: str | None = None) -> t.Entity:
        return await self._send(_ops.add_alias(entity_id, alias, source))

    async def match_entity(self, name: str, *, kind: str | None = None) -> t.EntityMatch:
        """``matched`` only when exactly one entity has that name or alias."""
        return await self._send(_ops.match_entity(name, kind))

    async def list_entities(
        self, *, q: str | None = None, limit: int | None = None, cursor: str | None = None
    ) -> t.Page[t.Entity]:
        """One page of the tenant's entities (``q``: part of a name or alias)."""
        return await self._send(_ops.list_entities(q, limit, cursor))

    async def iter_entities(
        self, *, q: str | None = None, page_size: int | None = None
    ) -> AsyncIterator[t.Entity]:
        """Every entity matching ``q``, fetching cursor pages as they are consumed."""
        cursor: str | None = None
        while True:
            page = await self.list_entities(q=q, limit=page_size, cursor=cursor)
            for entity in page["results"]:
                yield entity
            cursor = _ops.cursor_of(page["next"])
            if cursor is None:
                return

    async def entity_kinds(self) -> t.EntityKinds:
        """The kinds in use, most used first: reuse one before coining another."""
        return await self._send(_ops.entity_kinds())

    async def match_external_ref(
        self, external_ref: str, *, kind: str | None = None
    ) -> t.ExternalRefMatch:
        """``matched`` only when exactly one entity carries this id of another system."""
        return await self._send(_ops.match_external_ref(external_ref, kind))

    async def list_entity_facts(
        self, entity_id: str, *, limit: int | None = None, cursor: str | None = None
    ) -> t.Page[t.EntityFact]:
        """One page of the facts about an entity, as subject or referenced in a value."""
        return await self._send(_ops.list_entity_facts(entity_id, limit, cursor))

    async def iter_entity_facts(
        self, entity_id: str, *, page_size: int | None = None
    ) -> AsyncIterator[t.EntityFact]:
        """Every fact about the entity, fetching cursor pages as they are consumed."""
        cursor: str | None = None
        while True:
            page = await self.list_entity_facts(entity_id, limit=page_size, cursor=cursor)
            for fact in page["results"]:
                yield fact
            cursor = _ops.cursor_of(page["next"])
            if cursor is None:
                return

    async def export_entity(self, entity_id: str) -> t.ExportDocument:
        """Everything held about an entity (docs/api.md, Retention and erasure; newer servers)."""
        return await self._send(_ops.export_entity(entity_id))

    async def erase_entity(self, entity_id: str, *, reason: str) -> t.ErasureStarted:
        """Start erasing a subject (docs/api.md, Retention and erasure; newer servers)."""
        return await self._send(_ops.erase_entity(entity_id, reason))

    async def get_erasure(self, erasure_id: str) -> t.Erasure:
        return await self._send(_ops.get_erasure(erasure_id))

    # --- Memories ----------------------------------------------------------------------

    async def propose_memory(self, **proposal: Unpack[t.Proposal]) -> t.Memory:
        """Propose version 1 of a new item. It is not used by resolve until it is active."""
        return await self._send(_ops.propose_memory(proposal))

    async def list_memories(
        self,
        *,
        subject: str | None = None,
        field: str | None = None,
        kind: str | None = None,
        status: str | None = None,
        owner: str | None = None,
        scope: Mapping[str, str] | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> t.Page[t.Memory]:
        """One page of heads; ``iter_memories`` walks them all."""
        return await self._send(
            _ops.list_memories(
                subject=subject,
                field=field,
                kind=kind,
                status=status,
                owner=owner,
                scope=scope,
                limit=limit,
                cursor=cursor,
            )
        )

    async def iter_memories(
        self,
        *,
        subject: str | None = None,
        field: str | None = None,
        kind: str | None = None,
        status: str | None = None,
        owner: str | None = None,
        scope: Mapping[str, str] | None = None,
        page_size: int | None = None,
    ) -> AsyncIterator[t.Memory]:
        """Every head matching the filters, fetching cursor pages as they are consumed."""
        cursor: str | None = None
        while True:
            page = await self.list_memories(
                subject=subject,
                field=field,
                kind=kind,
                status=status,
                owner=owner,
                scope=scope,
                limit=page_size,
                cursor=cursor,
            )
            for item in page["results"]:
                yield item
            cursor = _ops.cursor_of(page["next"])
            if cursor is None:
                return

    async def get_memory(self, memory_id: str) -> t.Memory:
        """The head version; its ``version`` is what a correction must name."""
        return await self._send(_ops.get_memory(memory_id))

    async def list_versions(self, memory_id: str) -> list[t.Memory]:
        """Every version of the lineage, oldest first."""
        return await self._send(_ops.list_versions(memory_id))

    async def get_version(self, memory_id: str, number: int) -> t.Memory:
        return await self._send(_ops.get_version(memory_id, number))

    async def correct_memory(
        self, memory_id: str, read_version: int, **changes: Unpack[t.Correction]
    ) -> t.Memory:
        """Propose the next version, against the version the caller read (``If-Match``).

        Raises ``StaleVersion`` (with ``current_version``) when the item changed since:
        re-read it and decide again rather than overwrite what someone else corrected."""
        return await self._send(_ops.correct_memory(memory_id, read_version, changes))

    async def approve(self, memory_id: str, *, comment: str = "") -> t.Memory:
        """A reviewer's approval (user keys only)."""
        return await self._send(_ops.approve(memory_id, comment))

    async def reject(self, memory_id: str, *, reason: str) -> t.Memory:
        return await self._send(_ops.reject(memory_id, reason))

    async def retire(
        self, memory_id: str, *, reason: str, in_flight: t.InFlight = "reverify"
    ) -> t.Retirement:
        """When this returns, no resolve returns the item; tasks that used it are flagged."""
        return await self._send(_ops.retire(memory_id, reason, in_flight))

    async def recheck(self, memory_id: str) -> t.Memory:
        return await self._send(_ops.recheck(memory_id))

    async def add_scenario(self, memory_id: str, **scenario: Unpack[t.Scenario]) -> t.AddedScenario:
        return await self._send(_ops.add_scenario(memory_id, scenario))

    async def list_scenarios(self, memory_id: str) -> t.ScenarioList:
        return await self._send(_ops.list_scenarios(memory_id))

    async def remove_scenario(
        self, memory_id: str, scenario_id: int, *, reason: str
    ) -> t.AddedScenario:
        return await self._send(_ops.remove_scenario(memory_id, scenario_id, reason))

    async def list_checks(self, memory_id: str) -> list[t.CheckResult]:
        return await self._send(_ops.list_checks(memory_id))

    async def link_subject(self, memory_id: str, *, subject: str) -> t.Memory:
        """Attach a ``held_unresolved`` item to the entity it is about (reviewer)."""
        return await self._send(_ops.link_subject(memory_id, subject))

    async def clarify(self, memory_id: str, *, choice: str, member: str | None = None) -> t.Memory:
        """Answer a held proposal's ``needs_clarification`` with an option's id (the
        proposer or a reviewer); it then enters review."""
        return await self._send(_ops.clarify(memory_id, choice, member))

    async def list_my_proposals(
        self, *, status: str | None = None, limit: int | None = None, cursor: str | None = None
    ) -> t.Page[t.ProposalState]:
        """The caller's own proposals, oldest first, each with ``reasons`` in words."""
        return await self._send(_ops.list_my_proposals(status, limit, cursor))

    async def iter_my_proposals(
        self, *, status: str | None = None, page_size: int | None = None
    ) -> AsyncIterator[t.ProposalState]:
        cursor: str | None = None
        while True:
            page = await self.list_my_proposals(status=status, limit=page_size, cursor=cursor)
            for proposal in page["results"]:
                yield proposal
            cursor = _ops.cursor_of(page["next"])
            if cursor is None:
                return

    async def search(
        self,
        q: str,
        *,
        subject: str | None = None,
        kind: str | None = None,
        status: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> t.SearchPage:
        """Candidates (entities, facts, sources) for a text, best first; never an answer:
        resolve a fact's subject before using it."""
        return await self._send(
            _ops.search(q=q, subject=subject, kind=kind, status=status, limit=limit, cursor=cursor)
        )

    async def iter_search(
        self,
        q: str,
        *,
        subject: str | None = None,
        kind: str | None = None,
        status: str | None = None,
        page_size: int | None = None,
    ) -> AsyncIterator[t.SearchResult]:
        """Every candidate, fetching cursor pages as they are consumed."""
        cursor: str | None = None
        while True:
            page = await self.search(
                q, subject=subject, kind=kind, status=status, limit=page_size, cursor=cursor
            )
            for candidate in page["results"]:
                yield candidate
            cursor = _ops.cursor_of(page["next"])
            if cursor is None:
                return

    async def list_fields(self) -> t.FieldList:
        """The tenant's field catalog: ``{"results": [field, …]}``."""
        return await self._send(_ops.list_fields())

    async def get_field(self, name: str) -> t.FieldEntry:
        return await self._send(_ops.get_field(name))

    async def define_field(self, name: str, **entry: Any) -> t.FieldEntry:
        """Create or replace a catalog entry (tenant admin): ``value_schema``, ``kinds``,
        ``required_scope``, ``default_expiry_days``, ``authoritative_system``…"""
        return await self._send(_ops.define_field(name, entry))

    async def build_context(
        self,
        subjects: list[str],
        *,
        context: Mapping[str, str] | None = None,
        purpose: str = "answer",
        max_tokens: int | None = None,
        fields: list[str] | None = None,
        task_id: str | None = None,
        encoding: str | None = None,
    ) -> t.ContextBlock:
        """A governed context block for a prompt (``text``) with its parts as JSON; with
        ``purpose="action"`` authoritative values come only as advisory notes. ``max_tokens``
        counts in ``encoding`` ("cl100k_base", the default, or "o200k_base")."""
        return await self._send(
            _ops.build_context(
                subjects=subjects,
                context=context,
                purpose=purpose,
                max_tokens=max_tokens,
                fields=fields,
                task_id=task_id,
                encoding=encoding,
            )
        )

    # --- Resolve, tasks, policy --------------------------------------------------------

    async def resolve(
        self,
        subject: str,
        *,
        context: Mapping[str, str] | None = None,
        fields: list[str] | None = None,
        valid_at: t.Time | None = None,
        known_at: t.Time | None = None,
        task_id: str | None = None,
        explain: bool = False,
    ) -> t.Resolution:
        """What holds for the subject in this context. Call it before acting; pass
        ``task_id`` so a later retirement flags the task. An abstention means: ask."""
        return await self._send(
            _ops.resolve(
                subject=subject,
                context=context,
                fields=fields,
                valid_at=valid_at,
                known_at=known_at,
                task_id=task_id,
                explain=explain,
            )
        )

    async def check_task(self, task_id: str) -> t.TaskCheck:
        """Call before a consequential action: ``needs_reverification`` means resolve again."""
        return await self._send(_ops.check_task(task_id))

    async def get_policy(self) -> t.Policy:
        return await self._send(_ops.get_policy())

    async def publish_policy(
        self, *, precedence: Mapping[str, Any], reason: str
    ) -> t.PublishedPolicy:
        return await self._send(_ops.publish_policy(precedence, reason))

    async def revalidate(self, *, reason: str) -> t.RevalidationStarted:
        return await self._send(_ops.revalidate(reason))

    async def get_revalidation(self, job_id: str) -> t.Revalidation:
        return await self._send(_ops.get_revalidation(job_id))

    # --- Audit -------------------------------------------------------------------------

    async def list_audit(
        self,
        *,
        target: str | None = None,
        actor: str | None = None,
        action: str | None = None,
        since: t.Time | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> t.Page[t.AuditEvent]:
        return await self._send(
            _ops.list_audit(
                target=target, actor=actor, action=action, since=since, limit=limit, cursor=cursor
            )
        )

    async def iter_audit(
        self,
        *,
        target: str | None = None,
        actor: str | None = None,
        action: str | None = None,
        since: t.Time | None = None,
        page_size: int | None = None,
    ) -> AsyncIterator[t.AuditEvent]:
        """Every matching event in ``seq`` order, page by page."""
        cursor: str | None = None
        while True:
            page = await self.list_audit(
                target=target,
                actor=actor,
                action=action,
                since=since,
                limit=page_size,
                cursor=cursor,
            )
            for item in page["results"]:
                yield item
            cursor = _ops.cursor_of(page["next"])
            if cursor is None:
                return

    async def verify_audit(self) -> t.AuditVerification:
        return await self._send(_ops.verify_audit())

    # --- Webhooks (docs/api.md; newer servers) ----------------------------------------------

    async def create_webhook(
        self, *, url: str, events: list[t.WebhookEvent] | list[str], description: str = ""
    ) -> t.Webhook:
        """The answer holds ``secret``, shown this once: keep it for ``verify_webhook``."""
        return await self._send(_ops.create_webhook(url, list(events), description))

    async def list_webhooks(
        self, *, limit: int | None = None, cursor: str | None = None
    ) -> t.Page[t.Webhook]:
        return await self._send(_ops.list_webhooks(limit, cursor))

    async def get_webhook(self, webhook_id: str) -> t.Webhook:
        return await self._send(_ops.get_webhook(webhook_id))

    async def delete_webhook(self, webhook_id: str) -> None:
        await self._send(_ops.delete_webhook(webhook_id))

    async def rotate_webhook_secret(self, webhook_id: str) -> t.Webhook:
        return await self._send(_ops.rotate_webhook_secret(webhook_id))

    async def enable_webhook(self, webhook_id: str) -> t.WebhookEnabled:
        """A disabled endpoint delivers again, its held events first (oldest first)."""
        return await self._send(_ops.enable_webhook(webhook_id))

    async def list_webhook_deliveries(
        self, webhook_id: str, *, limit: int | None = None, cursor: str | None = None
    ) -> t.Page[t.WebhookDelivery]:
        return await self._send(_ops.list_webhook_deliveries(webhook_id, limit, cursor))

    # --- Health and schema -------------------------------------------------------------

    async def health(self) -> t.Health:
        return await self._send(_ops.health())

    async def readiness(self) -> t.Health:
        """``status`` is ``ok``, or ``unavailable`` naming the ``failing`` dependency."""
        return await self._send(_ops.readiness())

    async def openapi_schema(self) -> dict[str, Any]:
        return await self._send(_ops.openapi_schema())
