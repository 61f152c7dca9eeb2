"""Issue 43, point 10: a refusal reads as words beside what the person typed — quotes
placed where the service quoted a name, a lost race said as what happened, and a second
entity with a taken name created only when the reviewer says it is someone else."""

from __future__ import annotations

from typing import Any

from approvals import services
from memory import catalog
from memory.models import Entity, MemoryVersion, Status
from tests.dashboard.support import Demo
from tests.dashboard.test_held_mentions import _held, commit

__all__ = ["commit"]  # the fixture, used by name


def test_a_schema_refusal_quotes_the_field_and_keeps_the_apostrophe_as_it_is(
    demo: Demo,
) -> None:
    memory_id = demo.items["order_a"]
    MemoryVersion.objects.filter(item_id=memory_id).update(status=Status.CHECKS_FAILED)
    catalog.field_define(
        principal=demo.principal("rita"),
        name="delivery_address",
        data={"value_schema": {"type": "string", "pattern": "^[0-9]"}},
    )

    refused = demo.client("sam").post(
        f"/memories/{memory_id}/correct/",
        {"value": "Dock Road", "statement": "Order order-a goes to the dock.", "head_version": "1"},
    )

    body = refused.content.decode()
    assert refused.status_code == 422
    assert "field catalog&#x27;s schema for field “delivery_address”" in body
    assert "catalog“s" not in body and "”delivery_address“" not in body
    assert 'value="Dock Road"' in body


def test_a_link_made_meanwhile_in_another_tab_says_what_happened_in_words(
    demo: Demo, commit: Any, django_capture_on_commit_callbacks: Any
) -> None:
    held = _held(demo, commit)
    dana = Entity.objects.get(tenant=demo.tenant, name="Dana Kim")
    with django_capture_on_commit_callbacks(execute=True):
        services.memory_link_subject(
            principal=demo.principal("rita"), item=held.item, subject_id=dana.pk
        )

    late = demo.client("rita").post(
        f"/memories/{held.item_id}/subject/", {"subject": dana.pk, "confirm": "on"}
    )

    body = late.content.decode()
    assert late.status_code == 409
    assert (
        "Nothing was done: it changed after this page was loaded and is now "
        "“waiting for review”. The page shows it as it is."
    ) in body
    assert "Only a held_unresolved" not in body


def test_creating_an_entity_with_a_taken_name_asks_first_and_keeps_what_was_typed(
    demo: Demo, commit: Any, django_capture_on_commit_callbacks: Any
) -> None:
    held = _held(demo, commit)
    rita = demo.client("rita")
    typed = {"name": "Dana Kim", "kind": "customer", "aliases": "Dana", "confirm": "on"}

    asked = rita.post(f"/memories/{held.item_id}/subject/new/", typed)

    body = asked.content.decode()
    assert asked.status_code == 422
    assert "An entity with this name exists already: Dana Kim (customer)." in body
    assert "Create another entity with this name" in body
    assert 'value="Dana Kim"' in body
    assert Entity.objects.filter(tenant=demo.tenant, name="Dana Kim").count() == 1
    assert MemoryVersion.objects.get(pk=held.pk).status == Status.HELD_UNRESOLVED

    with django_capture_on_commit_callbacks(execute=True):
        created = rita.post(f"/memories/{held.item_id}/subject/new/", {**typed, "another": "on"})

    assert created.status_code == 302
    assert Entity.objects.filter(tenant=demo.tenant, name="Dana Kim").count() == 2


def test_the_owner_who_neither_proposed_nor_reviews_it_is_not_offered_a_scenario(
    demo: Demo,
) -> None:
    """sam owns order-a; the agent proposed it and only reviewers may add a scenario
    (``may_change_scenarios``): the form the service would refuse is not shown to him."""
    page = demo.client("sam").get(f"/memories/{demo.items['order_a']}/").content.decode()
    reviewer = demo.client("rita").get(f"/memories/{demo.items['order_a']}/").content.decode()

    assert 'id="add-scenario"' not in page
    assert 'id="add-scenario"' in reviewer


def test_a_dry_run_with_a_typo_says_so_at_the_top_and_beside_the_field(demo: Demo) -> None:
    typo = {
        "order": "specificity, kindd, verification, valid_from",
        "kind_rank": "task_fact, enterprise_rule, preference",
        "verification_rank": "verified_record, confirmed, asserted",
    }

    response = demo.client("rita").post("/policy/dry-run/", typo)

    body = response.content.decode()
    assert response.status_code == 422
    assert "Nothing was tried: see the field marked below." in body
    assert "kindd" in body  # named beside the field, what was typed kept
