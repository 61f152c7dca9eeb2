"""Fixtures for the fuzz run (scripts/fuzz.py): real objects in several states, created
through the API of the live server, so Schemathesis can aim its id path parameters at
things that exist (scripts/fuzz_hooks.py) instead of only hitting 404s.

The seeds' stories, small: Dana's delivery address (a preference, an order's task fact,
its correction), a procurement exception (an enterprise rule with one of two approvals),
Sarah's move (a subject not yet resolved), a rejected and a retired fact, a revoked
source, a task that used memory, and a re-validation job.
"""

from __future__ import annotations

import json
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx


class SeedError(RuntimeError):
    pass


class Seeder:
    def __init__(self, base: str, agent_key: str, reviewer_key: str) -> None:
        self.http = httpx.Client(base_url=f"{base}/api/v1", timeout=30)
        self.keys = {"agent": agent_key, "reviewer": reviewer_key}

    def call(self, who: str, method: str, path: str, body: Any = None, **headers: str) -> Any:
        answer = self.http.request(
            method,
            path,
            json=body,
            headers={"Authorization": f"Bearer {self.keys[who]}", **headers},
        )
        if answer.status_code >= 300:
            raise SeedError(f"{method} {path} -> {answer.status_code}: {answer.text[:300]}")
        return answer.json()

    def source(self, kind: str, content: str, ref: str = "") -> str:
        body = {"kind": kind, "content": content, "external_ref": ref}
        return str(self.call("agent", "POST", "/sources", body)["id"])

    def propose(self, **data: Any) -> str:
        return str(self.call("agent", "POST", "/memories", data)["id"])

    def wait_for(self, memory_id: str, wanted: str, seconds: float = 60) -> None:
        """The worker activates approved versions; wait for it (bounded)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.call("agent", "GET", f"/memories/{memory_id}")["status"] == wanted:
                return
            time.sleep(0.3)
        raise SeedError(f"{memory_id} did not become {wanted} within {seconds} s")


def seed(base: str, agent_key: str, reviewer_key: str) -> dict[str, list[Any]]:
    s = Seeder(base, agent_key, reviewer_key)
    later = (datetime.now(UTC) + timedelta(days=30)).isoformat()
    dana = s.call(
        "agent",
        "POST",
        "/entities",
        {"kind": "customer", "name": "Dana Kim (fuzz)", "aliases": ["D. Kim (fuzz)"]},
    )["id"]
    acme = s.call(
        "agent", "POST", "/entities", {"kind": "supplier", "name": "Acme (fuzz)", "aliases": []}
    )["id"]
    chat = s.source("message", "I normally want deliveries at home, 12 Elm Street.")
    order = s.source("business_record", "Order order-a: deliver to 4 Dock Road.", "ORD-A")
    approval = s.source("approval_record", "Exception APR-2291: Acme may ship P-9.", "APR-2291")
    withdrawn = s.source("business_record", "Order order-w: deliver to 9 Pier.", "ORD-W")

    fact = {
        "kind": "task_fact",
        "subject": dana,
        "field": "delivery_address",
        "owner": "sam",
        "expires_at": later,
        "sources": [order],
    }
    preference = s.propose(
        kind="preference",
        subject=dana,
        field="delivery_address",
        value="12 Elm Street",
        statement="Deliveries go home.",
        scope={},
        owner="sam",
        expires_at=None,
        sources=[chat],
    )
    active = s.propose(
        **fact,
        value="4 Dock Road",
        statement="order-a goes to the office.",
        scope={"task": "order-a"},
    )
    s.call("reviewer", "POST", f"/memories/{active}/approve", {"comment": "matches ORD-A"})
    pending = s.propose(
        **fact,
        value="5 Dock Road",
        statement="order-b goes to the dock.",
        scope={"task": "order-b"},
    )
    rejected = s.propose(
        **fact, value="6 Dock Road", statement="order-c, misread.", scope={"task": "order-c"}
    )
    s.call("reviewer", "POST", f"/memories/{rejected}/reject", {"reason": "not the order"})
    retired = s.propose(
        **fact,
        value="7 Dock Road",
        statement="order-d goes to the dock.",
        scope={"task": "order-d"},
    )
    s.call("reviewer", "POST", f"/memories/{retired}/approve", {"comment": "ok"})
    revoked = s.propose(
        **{**fact, "sources": [withdrawn]},
        value="9 Pier",
        statement="order-w goes to the pier.",
        scope={"task": "order-w"},
    )
    s.call("reviewer", "POST", f"/memories/{revoked}/approve", {"comment": "ok"})
    rule = s.propose(
        kind="enterprise_rule",
        subject=acme,
        field="may_ship",
        value=True,
        statement="Acme may ship for P-9 (APR-2291).",
        scope={"project": "P-9"},
        owner="rita",
        expires_at=later,
        sources=[approval],
        basis={"ref": "APR-2291", "version": "1"},
    )
    s.call("reviewer", "POST", f"/memories/{rule}/approve", {"comment": "first of two"})
    held = s.propose(
        kind="task_fact",
        subject_mention="Sarah Lee",
        field="delivery_address",
        value="3 Birch Road",
        statement="Sarah moved.",
        scope={"task": "order-s"},
        owner="sam",
        expires_at=later,
        sources=[order],
    )

    for memory_id in (preference, active, retired, revoked):
        s.wait_for(memory_id, "active")
    s.call(
        "reviewer",
        "POST",
        f"/memories/{retired}/retire",
        {"reason": "customer withdrew it", "in_flight": "continue"},
    )
    s.call("reviewer", "POST", f"/sources/{withdrawn}/revoke", {"reason": "order cancelled"})
    head = s.http.get(f"/memories/{active}", headers={"Authorization": f"Bearer {agent_key}"})
    s.call(
        "agent",
        "POST",
        f"/memories/{active}/versions",
        {"value": "7 Harbour Lane", "statement": "order-a moved to the harbour office."},
        **{"If-Match": head.headers["ETag"]},
    )
    s.call(
        "agent",
        "POST",
        "/resolve",
        {"subject": dana, "context": {"task": "order-a"}, "task_id": "order-a-checkout"},
    )
    job = s.call("reviewer", "POST", "/policy/revalidate", {"reason": "fuzz fixtures"})
    return {
        "memory_id": [preference, active, pending, rejected, retired, revoked, rule, held],
        "source_id": [chat, order, approval, withdrawn],
        "entity_id": [dana, acme],
        "task_id": ["order-a-checkout"],
        "job_id": [job["revalidation"]],
        "number": [1, 2],
    }


if __name__ == "__main__":
    # python -m scripts.fuzz_seed BASE_URL AGENT_KEY REVIEWER_KEY OUT.json
    _, url, agent, reviewer, out = sys.argv
    Path(out).write_text(json.dumps(seed(url, agent, reviewer), indent=2) + "\n")
