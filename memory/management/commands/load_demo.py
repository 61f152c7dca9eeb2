"""Load the demo tenant (idempotent): the seeds' three stories as memory, reviewers with
different authority and an agent key. Prints the logins and the key."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.utils import timezone

from accounts import tenancy
from accounts.grants import grant_from_text, permissions_grant
from core.models import ApiKey, Tenant
from core.principals import Principal
from memory import entities, proposals, sources

SLUG = "demo"
PEOPLE: list[tuple[str, str, list[str]]] = [
    (
        "rita",
        "Reviewer with authority over the whole tenant; tenant admin",
        [
            "review_task_fact",
            "review_enterprise_rule",
            "approve_tenant_wide_rule",
            "retire_memory",
            "manage_policy",
            "view_audit",
            "tenant_admin",
        ],
    ),
    (
        "lena",
        "Second approver for enterprise rules (tenant-wide)",
        ["review_enterprise_rule", "approve_tenant_wide_rule", "view_audit"],
    ),
    (
        "omar",
        "Reviewer for project P-9 only",
        ["review_task_fact@project=P-9", "review_enterprise_rule@project=P-9"],
    ),
    ("sam", "Owner of customer memory, no review authority", []),
]


class Command(BaseCommand):
    help = "Create the demo tenant with the seeds' stories (does nothing if it exists)."

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = Tenant.objects.filter(slug=SLUG).first()
        if tenant is None:
            tenant = self._create()
        key = self._agent_key(tenant)
        rita = self._agent_key(tenant, person="rita")
        self.stdout.write("Demo logins (password = username + '-demo-pass'):")
        for username, what, _ in PEOPLE:
            self.stdout.write(f"  {username:<5} {username}-demo-pass   {what}")
        self.stdout.write(f"Agent API key (tenant '{SLUG}'):\n  {key}")
        self.stdout.write(f"rita's personal API key (she reviews over the API too):\n  {rita}")
        self.stdout.write(
            f"Admin (tenant '{SLUG}' only): {settings.SITE_URL}/admin/ as rita / rita-demo-pass"
        )

    def _create(self) -> Tenant:
        tenant = tenancy.tenant_create(slug=SLUG, name="Demo Retail & Procurement")
        for username, _, grants in PEOPLE:
            user = tenancy.user_create(
                tenant=tenant,
                username=username,
                password=f"{username}-demo-pass",
                email=f"{username}@demo.memgov.local",
                labels=["staff"],
                staff=username == "rita",  # the demo's tenant admin
            )
            permissions_grant(
                user=user, tenant=tenant, grants=[grant_from_text(g) for g in grants], actor="demo"
            )
        agent = Principal(tenant=tenant, name="agent:assistant", labels=frozenset({"staff"}))
        _load_stories(agent)
        return tenant

    def _agent_key(self, tenant: Tenant, person: str = "") -> str:
        """The agent's key, or ``person``'s personal key: kept in ``var/`` across runs."""
        path = Path(settings.VAR_DIR) / (f"demo-{person}-key" if person else "demo-agent-key")
        if path.exists():
            raw = path.read_text().strip()
            prefix = raw.split("_")[1] if raw.count("_") >= 2 else ""
            if ApiKey.objects.filter(tenant=tenant, prefix=prefix, revoked_at=None).exists():
                return raw
        if person:
            user = get_user_model().objects.get(username=person, membership__tenant=tenant)
            _, raw = tenancy.api_key_create(
                tenant=tenant, user=user, labels=["staff"], actor="demo"
            )
        else:
            _, raw = tenancy.api_key_create(
                tenant=tenant, agent_name="assistant", labels=["staff"], actor="demo"
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(raw + "\n")
        path.chmod(0o600)
        return raw


def _load_stories(agent: Principal) -> None:
    now = timezone.now()
    _delivery_address(agent, now)
    _procurement_exception(agent, now)
    _sarah_moves(agent, now)


def _source(agent: Principal, kind: str, content: str, ref: str = "", **extra: Any) -> str:
    data = {"kind": kind, "content": content, "external_ref": ref, **extra}
    return sources.source_record(principal=agent, data=data).pk


def _propose(agent: Principal, **data: Any) -> None:
    defaults: dict[str, Any] = {
        "valid_from": None,
        "valid_to": None,
        "assertion": "state",
        "basis": {},
    }
    proposals.memory_propose(principal=agent, data={**defaults, **data})


def _delivery_address(agent: Principal, now: datetime) -> None:
    """Seed 002: home by preference, the office for order-a only, until it expires."""
    dana = entities.entity_create(
        principal=agent, kind="customer", name="Dana Kim", aliases=["D. Kim"]
    ).pk
    chat = _source(
        agent, "message", "I normally want deliveries at home, 12 Elm Street.", speaker="Dana Kim"
    )
    order = _source(
        agent,
        "business_record",
        "Order order-a: customer asked to deliver to the office, 4 Dock Road.",
        "ORD-A",
        version="2",
    )
    _propose(
        agent,
        kind="preference",
        subject=dana,
        field="delivery_address",
        value="12 Elm Street",
        statement="Dana normally wants deliveries at home.",
        scope={},
        owner="sam",
        expires_at=None,
        sources=[chat],
    )
    _propose(
        agent,
        kind="task_fact",
        subject=dana,
        field="delivery_address",
        value="4 Dock Road",
        statement="Order order-a goes to Dana's office.",
        scope={"task": "order-a"},
        owner="sam",
        expires_at=now + timedelta(days=14),
        sources=[order],
        basis={"ref": "ORD-A", "version": "2"},
    )


def _procurement_exception(agent: Principal, now: datetime) -> None:
    """Seed 001: an exception for one project, supplier and batch, not a company rule."""
    supplier = entities.entity_create(
        principal=agent, kind="supplier", name="Northwind Metals", external_ref="S-17"
    ).pk
    approval = _source(
        agent,
        "approval_record",
        "APR-2291 v3: renewal of project P-9 with supplier S-17, batch B-3, "
        "follows the historical-renewal exception process.",
        "APR-2291",
        version="3",
        visibility=["staff"],
    )
    policy = _source(
        agent,
        "business_record",
        "Procurement policy PP-4: supplier material checks are required.",
        "PP-4",
    )
    _propose(
        agent,
        kind="enterprise_rule",
        subject=supplier,
        field="material_checks",
        value="follow exception APR-2291",
        statement="Renewals of project P-9 with S-17, batch B-3, follow exception APR-2291.",
        scope={"project": "P-9", "supplier": "S-17", "batch": "B-3"},
        owner="rita",
        expires_at=now + timedelta(days=90),
        sources=[approval],
        basis={"ref": "APR-2291", "version": "3"},
        visibility=["staff"],
    )
    _propose(
        agent,
        kind="enterprise_rule",
        subject=supplier,
        field="material_checks",
        value="required",
        statement="Supplier material checks are required.",
        scope={"tenant": "*"},
        owner="rita",
        expires_at=now + timedelta(days=365),
        sources=[policy],
        basis={"ref": "PP-4"},
    )


def _sarah_moves(agent: Principal, now: datetime) -> None:
    """Seed 000: "I moved to Pune in March", said in June; a plan is not a state."""
    sarah = entities.entity_create(
        principal=agent, kind="person", name="Sarah Lee", aliases=["Sarah"]
    ).pk
    year = now.year if now.month > 6 else now.year - 1
    march, june = datetime(year, 3, 1, tzinfo=UTC), datetime(year, 6, 10, tzinfo=UTC)
    said = _source(
        agent, "message", "I moved to Pune in March.", speaker="Sarah Lee", occurred_at=june
    )
    earlier = _source(
        agent,
        "message",
        "I live in Mumbai.",
        speaker="Sarah Lee",
        occurred_at=datetime(year - 1, 9, 1, tzinfo=UTC),
    )
    plan = _source(agent, "message", "I'm joining Nova next month.", speaker="Sarah Lee")
    _propose(
        agent,
        kind="preference",
        subject=sarah,
        field="home_city",
        value="Mumbai",
        statement="Sarah lived in Mumbai.",
        scope={},
        owner="sam",
        expires_at=None,
        valid_to=march,
        sources=[earlier],
    )
    _propose(
        agent,
        kind="preference",
        subject=sarah,
        field="home_city",
        value="Pune",
        statement="Sarah moved to Pune in March.",
        scope={},
        owner="sam",
        expires_at=None,
        valid_from=march,
        sources=[said],
    )
    _propose(
        agent,
        kind="preference",
        subject=sarah,
        field="employer",
        value="Nova",
        statement="Sarah plans to join Nova next month.",
        scope={},
        owner="sam",
        expires_at=None,
        assertion="plan",
        valid_from=now + timedelta(days=30),
        sources=[plan],
    )
