"""Request examples of the OpenAPI description: the seeds' stories (shown in the docs, sent
by Schemathesis), by operation id (``extend_schema(examples=REQUEST_EXAMPLES[...])``)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample


def _example(name: str, summary: str, value: dict[str, Any]) -> OpenApiExample:
    return OpenApiExample(name, summary=summary, value=value, request_only=True)


_DANA, _NORTHWIND, _SARAH = (
    "ent_01j9dana0000000000000000",
    "ent_01j9northwind000000000000",
    "ent_01j9sarah00000000000000000",
)
_ORDER_A, _APR_2291 = "src_01j9ordera0000000000000000", "src_01j9apr22910000000000000"

REQUEST_EXAMPLES: dict[str, list[OpenApiExample]] = {
    "source_record": [
        _example(
            "order-record",
            "Seed 002: the order record that sends order-a to the office",
            {"kind": "business_record",
             "content": "Order order-a: customer asked to deliver to the office, 4 Dock Road.",
             "external_ref": "ORD-A", "version": "2"},
        ),
        _example(
            "approval-record",
            "Seed 001: the approved exception, visible to staff only",
            {"kind": "approval_record",
             "content": "APR-2291 v3: renewal of project P-9 with supplier S-17, batch B-3, "
                        "follows the historical-renewal exception process.",
             "external_ref": "APR-2291", "version": "3", "visibility": ["staff"]},
        ),
        _example(
            "message",
            "Seed 000: what Sarah said, and when",
            {"kind": "message", "content": "I moved to Pune in March.", "speaker": "Sarah Lee",
             "occurred_at": "2026-06-10T00:00:00Z"},
        ),
    ],
    "entity_create": [
        _example("customer", "Seed 002: the customer",
                 {"kind": "customer", "name": "Dana Kim", "aliases": ["D. Kim"]}),
        _example("supplier", "Seed 001: the supplier, with its own reference",
                 {"kind": "supplier", "name": "Northwind Metals", "external_ref": "S-17"}),
    ],
    "entity_alias_add": [
        _example("alias", "Seed 000: Sarah, as she signs", {"alias": "Sarah", "source": None}),
    ],
    "entity_match": [
        _example("match", "Seed 002: who is 'D. Kim'?", {"name": "D. Kim", "kind": "customer"}),
    ],
    "memory_propose": [
        _example(
            "preference",
            "Seed 002: Dana normally wants deliveries at home (no expiry, owned by sam)",
            {"kind": "preference", "subject": _DANA, "field": "delivery_address",
             "value": "12 Elm Street", "statement": "Dana normally wants deliveries at home.",
             "scope": {}, "owner": "sam", "expires_at": None,
             "sources": ["src_01j9chat000000000000000000"]},
        ),
        _example(
            "task-fact",
            "Seed 002: order-a goes to the office, on the order record's word",
            {"kind": "task_fact", "subject": _DANA, "field": "delivery_address",
             "value": "4 Dock Road", "statement": "Order order-a goes to Dana's office.",
             "scope": {"task": "order-a"}, "owner": "sam", "expires_at": "2027-01-15T00:00:00Z",
             "sources": [_ORDER_A], "basis": {"ref": "ORD-A", "version": "2"}},
        ),
        _example(
            "enterprise-rule",
            "Seed 001: an exception for one project, supplier and batch, not a company rule",
            {"kind": "enterprise_rule", "subject": _NORTHWIND, "field": "material_checks",
             "value": "follow exception APR-2291",
             "statement": "Renewals of project P-9 with S-17, batch B-3, follow exception "
                          "APR-2291.",
             "scope": {"project": "P-9", "supplier": "S-17", "batch": "B-3"}, "owner": "rita",
             "expires_at": "2027-03-01T00:00:00Z", "sources": [_APR_2291],
             "basis": {"ref": "APR-2291", "version": "3"}, "visibility": ["staff"],
             "scenarios": [{"kind": "inapplicable", "context": {"project": "P-10"},
                            "expect": "does_not_apply"}]},
        ),
        _example(
            "valid-from",
            "Seed 000: Sarah moved to Pune in March (said in June)",
            {"kind": "preference", "subject": _SARAH, "field": "home_city", "value": "Pune",
             "statement": "Sarah moved to Pune in March.", "scope": {}, "owner": "sam",
             "expires_at": None, "valid_from": "2026-03-01T00:00:00Z",
             "sources": ["src_01j9pune000000000000000000"]},
        ),
        _example(
            "unresolved-subject",
            "Seed 000: a subject named, not yet resolved to an entity",
            {"kind": "preference", "subject_mention": "Sarah", "field": "employer",
             "value": "Nova", "statement": "Sarah is joining Nova next month.", "scope": {},
             "owner": "sam", "expires_at": None, "assertion": "plan",
             "sources": ["src_01j9nova000000000000000000"]},
        ),
    ],
    "memory_correct": [
        _example(
            "new-address",
            "Seed 002: the office moved; the old value stays active until this one is",
            {"value": "7 Harbour Lane",
             "statement": "Order order-a goes to Dana's new office, 7 Harbour Lane.",
             "sources": [_ORDER_A]},
        ),
    ],
    "memory_approve": [
        _example("approve", "Seed 001: checked against the approval record",
                 {"comment": "Matches APR-2291 v3 for P-9 / S-17 / B-3."}),
    ],
    "memory_reject": [
        _example("reject", "Seed 001: a one-off correction is not a company rule",
                 {"reason": "This is an exception for P-9 only, not a tenant-wide rule."}),
    ],
    "memory_retire": [
        _example("retire", "Seed 002: the customer withdrew the instruction",
                 {"reason": "Dana asked us to stop using the office address.",
                  "in_flight": "reverify"}),
    ],
    "memory_scenario_add": [
        _example("out-of-scope", "Seed 001: another batch must not be exempt",
                 {"kind": "inapplicable", "context": {"project": "P-9", "supplier": "S-17",
                                                      "batch": "B-4"},
                  "expect": "does_not_apply"}),
    ],
    "memory_scenario_remove": [
        _example("wrong-scenario", "Issue 43: a scenario that misread the case",
                 {"reason": "B-4 is covered by the same exception; the scenario was wrong."}),
    ],
    "memory_link_subject": [
        _example("link", "Seed 000: 'Sarah' is Sarah Lee", {"subject": _SARAH}),
    ],
    "source_revoke": [
        _example("revoke", "Seed 001: the approval was withdrawn",
                 {"reason": "APR-2291 was withdrawn by procurement."}),
    ],
    "source_visibility_change": [
        _example("narrow", "Seed 001: only finance may see the approval now",
                 {"visibility": ["finance"], "reason": "Contains contract prices."}),
    ],
    "resolve": [
        _example("order-a", "Seed 002: where does order-a go? (records the retrieval)",
                 {"subject": _DANA, "fields": ["delivery_address"],
                  "context": {"task": "order-a"}, "task_id": "order-a-checkout",
                  "explain": True}),
        _example("as-of-april", "Seed 000: where did Sarah live in April?",
                 {"subject": _SARAH, "fields": ["home_city"], "context": {},
                  "valid_at": "2026-04-15T00:00:00Z"}),
    ],
    "webhook_create": [
        _example("retirements", "Seed 002: the checkout agent hears when an address is retired",
                 {"url": "https://agents.example.com/memgov",
                  "events": ["memory.retired", "task.needs_reverification"],
                  "description": "checkout agent"}),
    ],
    "webhook_rotate_secret": [
        _example("overlap-an-hour", "Receivers switch within the hour",
                 {"previous_valid_for_seconds": 3600}),
    ],
    "entity_erase": [
        _example("erasure-request", "Seed 000: Sarah asked us to forget what we hold about her",
                 {"reason": "Erasure request ER-114, verified by the privacy office."}),
    ],
    "policy_publish": [
        _example("verification-first",
                 "At equal specificity, a verified record outranks an asserted fact",
                 {"precedence": {"order": ["specificity", "verification", "kind", "valid_from"],
                                 "kind_rank": ["task_fact", "enterprise_rule", "preference"]},
                  "reason": "Audit finding: records beat what was merely said."}),
    ],
    "policy_revalidate": [
        _example("model-changed", "Re-check every active item",
                 {"reason": "The extraction model changed."}),
    ],
}  # fmt: skip
