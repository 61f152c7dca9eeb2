"""The test that catches the next leak (issue 42): hidden things carry canaries, and no
read anywhere shows them to a principal that must not see them.

Planted (``tests.canary.support.Canaries``; groups say who must not see what):

- another tenant's entity, source, active fact, held and pending proposals, field catalog
  entry, retrieval and revalidation (``other``);
- in the readers' tenant, behind ``finance``: an active fact about Northwind's
  ``credit_limit``, its source, a pending task fact; and a held proposal by a finance key
  with ``value_mention: "the same as before"`` whose options copied the hidden value
  (issue 42, point 1);
- behind ``hr``: a fact proposed by the agent key that later loses ``hr``, and one by a
  reviewer whose ``hr`` label is later removed (point 2);
- an erased person: name, alias, external ref, email and phone, her facts, a held
  proposal naming her by mention only, the source only her facts cite (recorded with an
  ``Idempotency-Key``), another subject's fact that references her and a clarification
  option of that subject that copied her value; erased through the API, the erasure run
  to its end (point 6).

Read by: the agent key without labels, the reviewer without labels (personal key and
dashboard session) and the other tenant's person, over REST (every read of the live
OpenAPI schema), MCP over stdio and streamable HTTP (every read-only tool), the dashboard
(crawled from the navigation, and every route with an id), plus every email and webhook
body of the whole story. After the erasure, ``pg_dump`` and every Redis database in use
must hold none of her canaries."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.db.models import Q
from django.test import Client
from mcp import Client as McpClient
from mcp import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from rest_framework.test import APIClient

import dashboard.urls
from accounts import people, tenancy
from accounts.grants import permission_grant
from agent_interface.auth import PrincipalRateThrottle
from core.models import TENANT_PERMISSIONS, ApiKey, Tenant
from memory import events
from memory.models import Embedding
from tests.cache.conftest import database_url, free_port
from tests.canary.support import (
    READ_POSTS,
    Canaries,
    Canary,
    Fillers,
    Findings,
    Receiver,
    argument_sets,
    crawl,
    dashboard_routes,
    dump_tables,
    live_receiver,
    pg_dump,
    read_operations,
    redis_dump,
    redis_urls,
    response_text,
    rest_calls,
    seen_text,
)
from tests.conftest import iso, later, needs
from webhooks.delivery import deliveries_due
from webhooks.models import WebhookDelivery

pytestmark = [needs("postgres"), needs("redis"), pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]
API = "/api/v1"
EVERY_PERMISSION = [codename for codename, _ in TENANT_PERMISSIONS]
REVIEWER = ["review_task_fact", "review_enterprise_rule", "approve_tenant_wide_rule"]
PASSWORD = "canary-pass-123"


# --- the world -----------------------------------------------------------------------------


@dataclass
class World:
    canaries: Canaries = field(default_factory=Canaries)
    keys: dict[str, str] = field(default_factory=dict)
    tenants: dict[str, Tenant] = field(default_factory=dict)
    ids: dict[str, str] = field(default_factory=dict)  # what the story needs again
    tasks: list[str] = field(default_factory=list)
    jobs: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=lambda: ["customer", "company"])
    fields: list[str] = field(default_factory=lambda: ["credit_limit", "delivery_address"])
    names: list[str] = field(default_factory=list)
    refs: list[str] = field(default_factory=list)
    mail_at_relabel: int = 0
    mail_at_erasure: int = 0

    def client(self, who: str) -> APIClient:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {self.keys[who]}")
        return client

    def call(
        self, who: str, method: str, path: str, body: Any = None, status: int = 200, **headers: Any
    ) -> Any:
        client = self.client(who)
        if method == "GET":
            response = client.get(f"{API}{path}")
        elif method == "PUT":
            response = client.put(f"{API}{path}", body, format="json", **headers)
        else:
            response = client.post(f"{API}{path}", body or {}, format="json", **headers)
        assert response.status_code == status, (method, path, response.content)
        return response.json()

    def id(self, value: str, group: str, purpose: str) -> str:
        self.canaries.id(value, group, purpose)
        return value


def _person(tenant: Tenant, name: str, labels: list[str], grants: list[str]) -> Any:
    user = tenancy.user_create(
        tenant=tenant,
        username=name,
        password=PASSWORD,
        email=f"{name}@{tenant.slug}.example",
        labels=labels,
    )
    for codename in grants:
        permission_grant(user=user, tenant=tenant, codename=codename)
    return user


def people_and_keys(w: World) -> None:
    a = tenancy.tenant_create(slug="canary-a", name="Reader's tenant")
    b = tenancy.tenant_create(slug="canary-b", name="Other tenant")
    for tenant in (a, b):
        tenancy.tenant_update_settings(tenant=tenant, approvals_required=1)
    w.tenants = {"a": a, "b": b}
    boss = _person(a, "boss", ["finance", "hr"], EVERY_PERMISSION)
    rhea = _person(a, "rhea", ["hr"], [*REVIEWER, "retire_memory"])
    bruno = _person(b, "bruno", [], EVERY_PERMISSION)
    for name, user, tenant in (("boss", boss, a), ("rhea", rhea, a), ("bruno", bruno, b)):
        w.keys[name] = tenancy.api_key_create(tenant=tenant, user=user)[1]
    agents = {"scribe": (a, []), "fin": (a, ["finance"]), "reader": (a, ["hr"]), "bscribe": (b, [])}
    for name, (tenant, labels) in agents.items():
        w.keys[name] = tenancy.api_key_create(tenant=tenant, agent_name=name, labels=labels)[1]


def source(
    w: World, who: str, group: str, purpose: str, kind: str = "message", **extra: Any
) -> str:
    headers = extra.pop("headers", {})
    content = extra.pop("content", None) or w.canaries.new(group, f"{purpose}-text")
    body = {"kind": kind, "content": content, **extra}
    created = w.call(who, "POST", "/sources", body, 201, **headers)
    return w.id(created["id"], "public" if group == "erased" else group, f"{purpose}-source-id")


def entity(
    w: World,
    who: str,
    group: str,
    purpose: str,
    *,
    plain: str = "",
    named: str = "",
    kind: str = "customer",
    **extra: Any,
) -> str:
    name = plain or named or w.canaries.new(group, f"{purpose}-name")
    if not plain:
        w.names.append(name)
    created = w.call(who, "POST", "/entities", {"kind": kind, "name": name, **extra}, 201)
    return w.id(created["id"], "public" if group == "erased" else group, f"{purpose}-entity-id")


def propose(
    w: World, who: str, group: str, purpose: str, body: dict[str, Any], status: str, **headers: Any
) -> str:
    owner = "bruno" if group == "other" else "boss"
    proposal = {"scope": {}, "owner": owner, "expires_at": None, **body}
    created = w.call(who, "POST", "/memories", proposal, 201, **headers)
    memory_id = created["id"]
    if status == "active":
        viewer = "bruno" if group == "other" else "boss"
        assert w.call(viewer, "GET", f"/memories/{memory_id}")["status"] == "active", created
    else:
        assert created["status"] == status, created
    return w.id(memory_id, "public" if group == "erased" else group, f"{purpose}-memory-id")


def fact(
    w: World, who: str, group: str, purpose: str, status: str, headers: Any = None, **body: Any
) -> str:
    """A preference (with a statement canary of its own) proposed by ``who``."""
    statement = w.canaries.new(group, f"{purpose}-statement")
    proposal = {"kind": "preference", "statement": statement, **body}
    return propose(w, who, group, purpose, proposal, status, **(headers or {}))


def held_for_a_value(w: World, who: str, subject: str, field_name: str, statement: str) -> Any:
    """A proposal whose value is "the same as before": held with the values in use as its
    options (docs/api.md, Clarification)."""
    body: dict[str, Any] = {"kind": "preference", "subject": subject, "field": field_name}
    body |= {"scope": {}}
    body |= {"value_mention": "the same as before", "statement": statement, "owner": "boss"}
    body |= {"expires_at": None, "sources": [w.ids["public_source"]]}
    held = w.call(who, "POST", "/memories", body, 201)
    assert held["status"] == "held_unresolved", held
    return held


def task_fact(subject: str, field_name: str, record: str, **extra: Any) -> dict[str, Any]:
    body = {"kind": "task_fact", "subject": subject, "field": field_name, "sources": [record]}
    return body | {"scope": {"task": "t-1"}, "expires_at": iso(later(30)), **extra}


def other_tenant(w: World) -> None:
    """Another tenant's things, each named by canaries: none may reach the readers."""
    c = w.canaries
    kind, field_name = c.new("other", "kind"), c.new("other", "field")
    w.kinds.append(kind)
    w.fields.append(field_name)
    described = {"description": c.new("other", "field-description")}
    w.call("bruno", "PUT", f"/fields/{field_name}", described)
    alias, ref, src_ref = (c.new("other", n) for n in ("alias", "external-ref", "source-ref"))
    w.names.append(alias)
    w.refs += [ref, src_ref]
    subject = entity(w, "bscribe", "other", "b", kind=kind, aliases=[alias], external_ref=ref)
    w.ids["b_entity"] = subject
    speaker = c.new("other", "speaker")
    said = source(w, "bscribe", "other", "b", external_ref=src_ref, speaker=speaker)
    record = source(w, "bscribe", "other", "b-record", kind="business_record")
    value = {"text": c.new("other", "value")}
    common = {"field": field_name, "sources": [said]}
    fact(w, "bscribe", "other", "b-active", "active", subject=subject, value=value, **common)
    mention = c.new("other", "mention")
    w.names.append(mention)
    held = c.new("other", "held-value")
    fact(
        w,
        "bscribe",
        "other",
        "b-held",
        "held_unresolved",
        subject_mention=mention,
        value=held,
        **common,
    )
    pending = task_fact(subject, field_name, record, value=c.new("other", "pending-value"))
    pending["statement"] = c.new("other", "pending-statement")
    propose(w, "bscribe", "other", "b-pending", pending, "pending_review")
    task = c.new("other", "task")
    w.tasks.append(task)
    asked = {"subject": subject, "context": {}, "task_id": task}
    w.id(w.call("bscribe", "POST", "/resolve", asked)["retrieval_id"], "other", "b-retrieval-id")
    job = w.call("bruno", "POST", "/policy/revalidate", {"reason": "model changed"}, 202)
    w.jobs.append(w.id(job["revalidation"], "other", "b-revalidation-id"))


def readers_tenant_public(w: World) -> None:
    """Visible to every principal of the readers' tenant, never to the other tenant."""
    c = w.canaries
    alias, ref = c.new("public", "alias"), c.new("public", "external-ref")
    w.names.append(alias)
    w.refs.append(ref)
    subject = entity(w, "scribe", "public", "a", aliases=[alias], external_ref=ref)
    said = w.ids["public_source"] = source(w, "scribe", "public", "a")
    value = c.new("public", "value")
    fact(
        w,
        "scribe",
        "public",
        "a-active",
        "active",
        subject=subject,
        field="delivery_address",
        value=value,
        sources=[said],
    )
    task = c.new("public", "task")
    w.tasks.append(task)
    w.call("scribe", "POST", "/resolve", {"subject": subject, "context": {}, "task_id": task})
    northwind = entity(
        w, "scribe", "public", "northwind", plain="Northwind Traders", kind="company"
    )
    w.ids["northwind"] = northwind
    w.ids["pat"] = entity(w, "scribe", "public", "pat", plain="Pat Employee", kind="person")


def behind_labels(w: World) -> None:
    """Finance: Northwind's credit limit, a pending task fact, and the held proposal whose
    options copy the credit limit (point 1). HR: one fact by the agent key and one by the
    reviewer, who both lose ``hr`` afterwards (point 2)."""
    c = w.canaries
    northwind, hidden = w.ids["northwind"], ["finance"]
    ref = c.new("finance", "source-ref")
    ledger = source(w, "fin", "finance", "fin", visibility=hidden, external_ref=ref)
    limit: dict[str, Any] = {
        "amount": 50000,
        "currency": "EUR",
        "ref": c.new("finance", "credit-limit-value"),
    }
    on = {"subject": northwind, "field": "credit_limit"}
    fact(
        w,
        "fin",
        "finance",
        "fin-limit",
        "active",
        value=limit,
        sources=[ledger],
        visibility=hidden,
        **on,
    )
    record = source(w, "fin", "finance", "fin-record", kind="business_record", visibility=hidden)
    terms = task_fact(northwind, "payment_terms", record, value=c.new("finance", "terms-value"))
    terms |= {"statement": c.new("finance", "terms-statement"), "visibility": hidden}
    propose(w, "fin", "finance", "fin-terms", terms, "pending_review")
    held = held_for_a_value(w, "fin", northwind, "credit_limit", "Northwind's limit stays.")
    # The finance key may see what it was offered: the hidden value, copied (point 1).
    assert limit["ref"] in json.dumps(held["needs_clarification"]), held
    w.ids["point1_held"] = held["id"]
    # A proposal by the key without labels that ties with the hidden credit limit: its
    # status reason and checks named the hidden memory's id (issue 44 walk, point 2).
    tie: dict[str, Any] = {"kind": "preference", "subject": northwind, "field": "credit_limit"}
    tie |= {"scope": {}}
    tie |= {"value": {"amount": 1}, "statement": "Northwind's limit is small."}
    tie |= {"owner": "boss", "expires_at": None, "sources": [w.ids["public_source"]]}
    tied = w.call("scribe", "POST", "/memories", tie, 201)["id"]
    assert w.call("scribe", "GET", f"/memories/{tied}")["status"] == "checks_failed"
    w.id(tied, "public", "tie-with-hidden-memory-id")

    for who, purpose, field_name in (
        ("reader", "hr-agent", "salary"),
        ("rhea", "hr-reviewer", "notes"),
    ):
        note = source(w, who, "hr", purpose, visibility=["hr"])
        value = c.new("hr", f"{purpose}-value")
        fact(
            w,
            who,
            "hr",
            purpose,
            "active",
            subject=w.ids["pat"],
            field=field_name,
            value=value,
            sources=[note],
            visibility=["hr"],
        )


def erased_person(w: World) -> str:
    """Everything point 6 found left behind, each carrying her canaries."""
    c = w.canaries
    name, alias, ref = (c.new("erased", n) for n in ("name", "alias", "external-ref"))
    w.names.append(alias)
    w.refs.append(ref)
    email = c.add(f"canary.{uuid.uuid4().hex[:8]}@example.org", "erased", "email")
    phone = c.add(f"+44 7700 9{uuid.uuid4().int % 10**5:05d}", "erased", "phone")
    her = entity(w, "scribe", "erased", "her", named=name, aliases=[alias], external_ref=ref)
    # Her message, recorded with an Idempotency-Key: its stored replay holds it too.
    content = f"{c.new('erased', 'message')}: write to {email} or call {phone}."
    extra = {"speaker": c.new("erased", "speaker"), "external_ref": c.new("erased", "source-ref")}
    replayed = {"HTTP_IDEMPOTENCY_KEY": "canary-her-source"}
    said = source(w, "scribe", "erased", "her", content=content, headers=replayed, **extra)
    address = c.new("erased", "address")
    replayed = {"HTTP_IDEMPOTENCY_KEY": "canary-her-address"}
    fact(
        w,
        "scribe",
        "erased",
        "her-address",
        "active",
        replayed,
        subject=her,
        field="delivery_address",
        value=address,
        sources=[said],
    )
    # Held, naming her by mention only, never linked (and citing her message).
    held = c.new("erased", "held-value")
    fact(
        w,
        "scribe",
        "erased",
        "her-mention",
        "held_unresolved",
        subject_mention=name,
        field="delivery_note",
        value=held,
        sources=[said],
    )
    # Another subject's fact that references her, and its held proposal whose option
    # copied that value.
    household = entity(
        w, "scribe", "public", "household", plain="Quayside Household", kind="household"
    )
    contact = {"person": {"entity": her}, "phone": phone, "note": c.new("erased", "contact-note")}
    fact(
        w,
        "scribe",
        "erased",
        "her-contact",
        "active",
        subject=household,
        field="emergency_contact",
        value=contact,
        sources=[w.ids["public_source"]],
    )
    copied = held_for_a_value(w, "scribe", household, "emergency_contact", "Same contact.")
    assert phone in json.dumps(copied["needs_clarification"]), copied
    w.ids["copied_option"] = copied["id"]
    # A retrieval of her facts, and cached answers about her and the household.
    w.call("scribe", "POST", "/resolve", {"subject": her, "context": {}, "task_id": "task-her"})
    w.call("scribe", "POST", "/resolve", {"subject": household, "context": {}})
    return her


def erase(w: World, her: str, mailoutbox: list[Any]) -> dict[str, Any]:
    w.mail_at_erasure = len(mailoutbox)
    erasure = w.call(
        "boss", "POST", f"/entities/{her}/erase", {"reason": "privacy request PRIV-42"}, 202
    )["erasure"]
    w.id(erasure, "public", "erasure-id")
    deadline = time.monotonic() + 30
    while (job := w.call("boss", "GET", f"/erasures/{erasure}"))["status"] == "running":
        assert time.monotonic() < deadline, job
        time.sleep(0.1)
    assert job["status"] == "done", job
    return dict(job)


def drop_labels(w: World, mailoutbox: list[Any]) -> None:
    """The agent key loses ``hr`` (behind Memgov's back, as an operator's UPDATE would), the
    reviewer loses it through the service."""
    w.mail_at_relabel = len(mailoutbox)
    prefix = w.keys["reader"].split("_")[1]
    assert ApiKey.objects.filter(prefix=prefix).update(labels=[]) == 1
    people.membership_relabel(user=User.objects.get(username="rhea"), labels=[])


# --- the live web role and MCP sessions ---------------------------------------------------


@dataclass
class Live:
    base: str
    env: dict[str, str]
    process: subprocess.Popen[bytes]


@pytest.fixture
def live(transactional_db: Any) -> Iterator[Live]:
    """gunicorn serving ``config.wsgi`` as deployed (the API and ``/mcp``), on the test
    database and this process's Redis databases (so the Redis scan covers it too)."""
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "CACHE_URL": str(settings.CACHE_URL),
        "CELERY_BROKER_URL": str(settings.CELERY_BROKER_URL),
        "SECRET_KEY": "test-only-secret-key-for-the-canary",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "DEBUG": "false",
        "EMAIL_URL": "dummy://",
        "MEMGOV_THROTTLE_RATE": "1000000/min",
        "MEMGOV_PROBE_PORT": "0",  # no fixed probe port to share with a parallel test process
        "MEMGOV_SEMANTIC": "true",  # reads by meaning are read surfaces too (issue 45)
        "DJANGO_SETTINGS_MODULE": "config.settings",
    }
    logs = ROOT / "var" / "test"
    logs.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        "config.wsgi:application",
        "-c",
        "deploy/gunicorn.conf.py",
    ]
    command += ["--workers=1", f"--bind=127.0.0.1:{port}", "--log-level=warning"]
    log_path = logs / f"canary-gunicorn-{port}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)  # noqa: S603
    try:
        yield Live(base=f"http://127.0.0.1:{port}", env=env, process=process)
    finally:
        served = process.poll() is None  # a server that exited keeps its log for the reader
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
        if served:
            log_path.unlink()


def wait_for(live: Live) -> None:
    deadline = time.monotonic() + 90
    while True:
        assert live.process.poll() is None, "gunicorn exited; see var/test/canary-gunicorn-*.log"
        try:
            with urllib.request.urlopen(f"{live.base}/healthz", timeout=2):  # noqa: S310
                return
        except OSError:
            assert time.monotonic() < deadline, "gunicorn did not answer /healthz"
            time.sleep(0.1)


def over_http(live: Live, key: str) -> AbstractAsyncContextManager[McpClient]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60)
    return McpClient(streamable_http_client(f"{live.base}/mcp", http_client=http))


def over_stdio(live: Live, key: str) -> AbstractAsyncContextManager[McpClient]:
    env = {**live.env, "MEMGOV_API_KEY": key}
    command = StdioServerParameters(
        command=sys.executable, args=["manage.py", "mcp"], env=env, cwd=str(ROOT)
    )
    return McpClient(command, read_timeout_seconds=60)


async def mcp_reads(
    session: AbstractAsyncContextManager[McpClient],
    surface: str,
    reader: str,
    forbidden: list[Canary],
    fillers: Fillers,
    findings: Findings,
) -> None:
    """Every tool the server marks read-only, with every planted id and string."""
    async with session as client:
        listed = await client.list_tools()
        assert listed.tools, surface
        answered = 0
        for tool in listed.tools:
            hint = tool.annotations.read_only_hint if tool.annotations else None
            if hint is None:
                findings.errors.append(f"{surface}: tool {tool.name} says neither read nor write")
                continue
            if not hint:
                continue
            schema = tool.input_schema
            for args in argument_sets(
                schema.get("properties", {}), schema.get("required", []), fillers
            ):
                result = await client.call_tool(tool.name, args)
                body = result.structured_content or {}
                if result.is_error and int(body.get("status", 500)) >= 500:
                    findings.errors.append(f"{surface} {reader} {tool.name}({args}) -> {body}")
                answered += not result.is_error
                shown = [json.dumps(body, ensure_ascii=False)]
                shown += [getattr(part, "text", "") for part in result.content]
                call = f"{tool.name}({json.dumps(args)})"
                findings.scan(
                    f"{surface} {tool.name}",
                    reader,
                    call,
                    seen_text("\n".join(shown)),
                    forbidden,
                    _sent(args),
                )
        if answered < 10:  # a session refused everything would prove nothing
            findings.errors.append(f"{surface} {reader}: only {answered} calls answered")


def _sent(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in _sent(v)]
    if isinstance(value, list):
        return [s for v in value for s in _sent(v)]
    return [str(value)]


# --- the story -----------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _quick_and_loopback(settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    settings.MEMGOV_WEBHOOK_ALLOW_PRIVATE = True  # the receivers listen on 127.0.0.1
    settings.MEMGOV_WEBHOOK_RETRY_BASE_SECONDS = 0.2
    monkeypatch.setattr(PrincipalRateThrottle, "THROTTLE_RATES", {"principal": "1000000/min"})


@pytest.fixture
def receivers() -> Iterator[dict[str, Receiver]]:
    with live_receiver() as a, live_receiver() as b:
        yield {"a": a, "b": b}


def _vectors_of(entity_id: str) -> Any:
    return Embedding.objects.filter(Q(entity_id=entity_id) | Q(version__item__subject_id=entity_id))


def test_no_read_shows_a_principal_what_it_may_not_see(
    live: Live, receivers: dict[str, Receiver], mailoutbox: list[Any], semantic_on: None
) -> None:
    w = World()
    people_and_keys(w)
    for who, tenant in (("boss", "a"), ("bruno", "b")):
        hook = w.call(
            who,
            "POST",
            "/webhooks",
            {"url": receivers[tenant].url, "events": list(events.EVENT_TYPES)},
            201,
        )
        w.id(hook["id"], "public" if tenant == "a" else "other", "webhook-id")
    other_tenant(w)
    readers_tenant_public(w)
    behind_labels(w)
    her = erased_person(w)
    drop_labels(w, mailoutbox)
    hers_embedded = _vectors_of(her).count()
    job = erase(w, her, mailoutbox)
    findings = Findings()
    c = w.canaries

    # Vectors (semantic retrieval) are numbers no text scan can read: none of hers, nor of
    # anything erased, may be left (issue 45).
    assert hers_embedded >= 2  # her entity and her facts had vectors before
    assert not _vectors_of(her).exists()
    assert not Embedding.objects.filter(version__erased_at__isnull=False).exists()

    # At rest, after the erasure: the database as pg_dump writes it, every Redis database.
    hers = c.of("erased", ids=False)
    for table, rows in dump_tables(pg_dump()):
        findings.scan("pg_dump", "-", f"table {table}", rows, hers)
    for url in redis_urls():
        for key, raw in redis_dump(url):
            findings.scan("Redis", "-", f"{url} key {key}", raw.decode("utf-8", "replace"), hers)
    assert job["counts"]["versions"] >= 1

    a_reader = [*c.of("other", "finance", "hr"), *c.of("erased", ids=False)]
    b_reader = [*c.of("public", "finance", "hr"), *c.of("erased")]
    fillers = Fillers(
        ids=list(
            dict.fromkeys(
                [
                    *(x.text for x in c.of("other", "public", "finance", "hr") if x.is_id),
                    w.ids["point1_held"],
                    w.ids["copied_option"],
                ]
            )
        ),
        texts=[x.text for x in c.planted.values() if not x.is_id],
        names=w.names,
        terms=[
            "CANARY",
            *w.names,
            *w.refs,
            *(x.text for x in c.of("erased", ids=False) if x.purpose in ("email", "phone")),
        ],
        refs=w.refs,
        fields=w.fields,
        tasks=[*w.tasks, "task-her"],
        kinds=w.kinds,
        jobs=w.jobs,
        owners=["boss", "rhea", "bruno"],
    )

    # MCP over stdio and streamable HTTP: the sessions run while REST and the dashboard
    # are read in this thread.
    wait_for(live)
    mcp_readers = [
        ("agent key without labels", "reader", a_reader),
        ("reviewer's key without labels", "rhea", a_reader),
        ("other tenant's key", "bruno", b_reader),
    ]

    over_mcp = Findings()  # filled in the sessions' thread, merged after

    async def every_session() -> None:
        async with anyio.create_task_group() as group:
            for label, who, forbidden in mcp_readers:
                group.start_soon(
                    mcp_reads,
                    over_stdio(live, w.keys[who]),
                    "MCP stdio",
                    label,
                    forbidden,
                    fillers,
                    over_mcp,
                )
                group.start_soon(
                    mcp_reads,
                    over_http(live, w.keys[who]),
                    "MCP HTTP",
                    label,
                    forbidden,
                    fillers,
                    over_mcp,
                )

    with ThreadPoolExecutor(max_workers=1) as pool:
        mcp = pool.submit(anyio.run, every_session)

        # REST: every read of the live schema.
        schema = Client().get("/api/schema/", {"format": "json"})
        assert schema.status_code == 200
        operations, unclassified = read_operations(json.loads(schema.content))
        for name in unclassified:  # a new endpoint: say which it is, then it is read
            findings.errors.append(f"{name}: classify it in READ_POSTS or WRITE_POSTS")
        probed = {o.path for o in operations if o.method == "POST"}
        assert probed == READ_POSTS, f"read POSTs missing from the schema: {READ_POSTS - probed}"
        session = APIClient()
        assert session.login(username="rhea", password=PASSWORD)
        rest_readers = [
            ("agent key without labels", w.client("reader"), a_reader),
            ("reviewer's key without labels", w.client("rhea"), a_reader),
            ("reviewer's session without labels", session, a_reader),
            ("other tenant's key", w.client("bruno"), b_reader),
        ]
        # Each reader reads what it may (else a refusal everywhere would pass): the
        # readers' tenant's public held proposal, the other tenant's its own entity.
        for label, client, forbidden in rest_readers:
            mine = w.ids["point1_held"] if forbidden is a_reader else w.ids["b_entity"]
            path = f"{API}/memories/{mine}" if mine.startswith("mem_") else f"{API}/entities/{mine}"
            assert client.get(path).status_code == 200, (label, path)
        for operation in operations:
            surface = f"REST {operation.method} {operation.path}"
            for url, body, sent in rest_calls(operation, fillers):
                for label, client, forbidden in rest_readers:
                    if body is None:
                        response = client.get(url)
                    else:
                        response = client.post(url, body, format="json")
                    if response.status_code >= 500 or response.status_code == 429:
                        findings.errors.append(
                            f"{surface} {label} {url} {body} -> {response.status_code}"
                        )
                    call = url if body is None else f"{url} {json.dumps(body)}"
                    findings.scan(
                        surface, label, call, seen_text(response_text(response)), forbidden, sent
                    )

        # The dashboard: every page reachable from the navigation, and every route with an id.
        crawled: dict[str, list[str]] = {}
        for username, forbidden in (("rhea", a_reader), ("bruno", b_reader)):
            browser = Client()
            assert browser.login(username=username, password=PASSWORD)
            pages = crawl(browser)
            assert pages["/"].status_code == 200
            crawled[username] = [f"{r.status_code} {u}" for u, r in pages.items()]
            for url, response in pages.items():
                findings.scan(
                    "dashboard", username, url, seen_text(response_text(response)), forbidden
                )
            for url, sent in dashboard_routes(dashboard.urls.urlpatterns, fillers):
                page = browser.get(url)
                if page.status_code >= 500:
                    findings.errors.append(f"dashboard {username} {url} -> {page.status_code}")
                findings.scan(
                    "dashboard", username, url, seen_text(response_text(page)), forbidden, sent
                )
        mcp.result()
    findings.merge(over_mcp)

    # Webhook bodies: nothing of the other tenant, no value at all of what is hidden.
    deadline = time.monotonic() + 30
    while WebhookDelivery.objects.filter(status="pending").exists():
        assert time.monotonic() < deadline, "webhook deliveries still pending"
        deliveries_due()
        time.sleep(0.1)
    hook_forbidden = {
        "a": [*c.of("other"), *c.of("finance", "hr", "erased", ids=False)],
        "b": b_reader,
    }
    for tenant, receiver in receivers.items():
        assert receiver.all(), f"tenant {tenant}'s receiver got no event"
        for event_id, body in receiver.all():
            findings.scan(
                "webhook body",
                f"tenant {tenant}'s endpoint",
                event_id,
                seen_text(body.decode()),
                hook_forbidden[tenant],
            )

    # Emails of the whole story.
    assert mailoutbox, "the story sends reviewers emails"
    for index, message in enumerate(mailoutbox):
        text = "\n".join(
            [
                message.subject,
                str(message.body),
                *(str(a[0]) for a in getattr(message, "alternatives", [])),
            ]
        )
        for recipient in message.recipients():
            forbidden = list(c.of("other")) if recipient.endswith("@canary-a.example") else b_reader
            if recipient == "rhea@canary-a.example":
                forbidden += c.of("finance")
                if index >= w.mail_at_relabel:
                    forbidden += c.of("hr")
            if index >= w.mail_at_erasure:
                forbidden += c.of("erased", ids=False)
            findings.scan(
                "email", recipient, f"#{index} {message.subject!r}", seen_text(text), forbidden
            )

    assert findings.calls > 1000, findings.calls
    report = ROOT / "var" / "test" / "canary-findings.txt"
    known = {
        w.ids["point1_held"]: "point-1 held proposal",
        w.ids["copied_option"]: "held proposal whose option copied her",
    }
    counts = "\n".join(f"{n:6d} {s}" for s, n in sorted(findings.per_surface.items()))
    mails = "\n".join(f"#{i} {m.to} {m.subject!r}" for i, m in enumerate(mailoutbox))
    hooks = {t: len(r.all()) for t, r in receivers.items()}
    report.write_text(
        f"{findings.report(c, known)}\n\nreads per surface:\n{counts}\n\n"
        f"emails:\n{mails}\n\nwebhook bodies per tenant: {hooks}\n\n"
        f"dashboard pages crawled: {json.dumps(crawled, indent=1)}\n"
    )
    if findings.errors:
        pytest.fail("\n".join(findings.errors), pytrace=False)
    if findings.found:
        pytest.fail(
            f"{len(findings.found)} canary sightings in {findings.calls} reads "
            f"(every one in {report}):\n{findings.summary()}",
            pytrace=False,
        )
