"""Issue 43, point 11: a field whose catalog entry names an authoritative system is marked
"memory only — the system of record is …" where reviewers decide (item, subject and time
travel pages), in the words the context block uses; the catalog shows and takes its
schemas as JSON."""

from __future__ import annotations

import html
import json
import re

from django.utils.html import strip_tags

from memory.catalog import advisory_words, field_define
from memory.context import ContextRequest, build_context
from memory.models import FieldDefinition
from tests.dashboard.support import Demo

MARK = "memory only — the system of record is Order service"
SCHEMA = {"type": "string", "minLength": 3, "maxLength": 200}


def _text(page: bytes) -> str:
    return " ".join(html.unescape(strip_tags(page.decode())).split())


def _notes(page: bytes) -> list[str]:
    """The advisory notes of a page, as read."""
    found = re.findall(r'<p class="advisory-note"[^>]*>(.*?)</p>', page.decode(), flags=re.S)
    return [" ".join(html.unescape(strip_tags(note)).split()) for note in found]


def _orders_hold_addresses(demo: Demo) -> None:
    field_define(
        principal=demo.principal("rita"),
        name="delivery_address",
        data={
            "value_schema": SCHEMA,
            "authoritative_system": {"name": "Order service", "tool": "orders.get_order"},
        },
    )


def test_an_address_the_order_service_holds_is_memory_only_on_the_item_page(demo: Demo) -> None:
    _orders_hold_addresses(demo)

    page = demo.client("rita").get(f"/memories/{demo.items['order_a']}/").content

    assert _notes(page) == [
        "Memory only — the system of record is Order service.",
        f"Every value of delivery_address below is {MARK}.",
    ]
    claim = page.decode()[page.decode().index('id="claim"') :]
    assert claim.index("4 Dock Road") < claim.index('id="advisory-note"') < claim.index("</dl>")


def test_the_subject_and_time_travel_pages_mark_it_too(demo: Demo) -> None:
    _orders_hold_addresses(demo)
    dana = str(demo.item("dana_home").subject_id)
    rita = demo.client("rita")

    subject = rita.get(f"/entities/{dana}/").content
    travel = rita.get("/browse/", {"tt_subject": dana, "tt_context": "task=order-a"}).content

    assert _notes(subject) == ["Memory only — the system of record is Order service."]
    assert "12 Elm StreetMemory only — the system of record is Order service." in _text(subject)
    assert _notes(travel) == ["Memory only — the system of record is Order service."]
    assert "12 Elm StreetMemory only — the system of record is Order service." in _text(travel)


def test_a_field_without_a_system_of_record_is_not_marked(demo: Demo) -> None:
    page = demo.client("rita").get(f"/memories/{demo.items['order_a']}/").content

    assert _notes(page) == []
    assert "memory only" not in _text(page).lower()


def test_the_context_block_says_it_in_the_same_words(demo: Demo) -> None:
    _orders_hold_addresses(demo)
    dana = str(demo.item("dana_home").subject_id)

    block = build_context(
        demo.agent(),
        ContextRequest(
            subjects=(dana,), context={"task": "order-a"}, purpose="answer", max_tokens=2000
        ),
    )

    assert advisory_words("Order service") == MARK
    assert MARK in block["text"]


def test_the_catalog_shows_each_schema_as_json_that_can_be_pasted_back(demo: Demo) -> None:
    _orders_hold_addresses(demo)
    rita = demo.client("rita")

    page = rita.get("/fields/", {"name": "delivery_address"}).content.decode()

    [shown] = re.findall(r'<pre class="schema">(.*?)</pre>', page, flags=re.S)
    assert json.loads(html.unescape(shown)) == SCHEMA
    assert html.unescape(shown).startswith('{\n  "')  # indented, one member a line
    [in_form] = re.findall(r'<textarea name="value_schema"[^>]*>(.*?)</textarea>', page, re.S)
    assert json.loads(html.unescape(in_form)) == SCHEMA
    saved = rita.post(
        "/fields/save/",
        {
            "name": "delivery_address",
            "editing": "delivery_address",  # opened from its link in the table
            "value_schema": html.unescape(shown),
            "kinds": [],
        },
    )
    assert saved.status_code == 302
    stored = FieldDefinition.objects.get(tenant=demo.tenant, name="delivery_address")
    assert stored.value_schema == SCHEMA


def test_a_python_dict_is_refused_beside_the_schema_and_what_was_typed_stays(
    demo: Demo,
) -> None:
    _orders_hold_addresses(demo)
    typed = "{'type': 'integer'}"

    response = demo.client("rita").post(
        "/fields/save/",
        {"name": "delivery_address", "value_schema": typed, "system_name": "Order service"},
    )

    assert response.status_code == 422
    page = response.content.decode()
    form = page[page.index('id="edit-h"') :]
    error = form[: form.index('<textarea name="value_schema"')]
    assert "This is not JSON (line 1, column 2): expecting property name enclosed in double" in (
        html.unescape(error)
    )
    assert html.escape(typed) in form or typed.replace("'", "&#x27;") in form
    stored = FieldDefinition.objects.get(tenant=demo.tenant, name="delivery_address")
    assert stored.value_schema == SCHEMA


def test_a_schema_the_catalog_refuses_is_named_beside_the_schema(demo: Demo) -> None:
    response = demo.client("rita").post(
        "/fields/save/",
        {"name": "delivery_address", "value_schema": '{"type": "strung"}'},
    )

    assert response.status_code == 422
    page = response.content.decode()
    form = page[page.index('id="edit-h"') :]
    before_schema = form[: form.index('<textarea name="value_schema"')]
    assert 'class="errorlist' in before_schema[before_schema.index('for="id_value_schema"') :]
    assert "strung" in before_schema[before_schema.index('class="errorlist') :]
    assert "&quot;strung&quot;" in form


def test_typing_a_catalogued_name_in_a_new_entry_replaces_nothing(demo: Demo) -> None:
    """rita types "delivery_address" in an empty form (not opened from the table): the
    entry naming the Order service as its system of record stays whole."""
    _orders_hold_addresses(demo)
    before = FieldDefinition.objects.get(tenant=demo.tenant, name="delivery_address")

    response = demo.client("rita").post(
        "/fields/save/", {"name": "delivery_address", "value_schema": '{"type": "string"}'}
    )

    assert response.status_code == 409
    page = html.unescape(response.content.decode())
    assert "A field named “delivery_address” is in the catalog already." in page
    after = FieldDefinition.objects.get(tenant=demo.tenant, name="delivery_address")
    assert (after.value_schema, after.authority_name, after.updated_at) == (
        before.value_schema,
        before.authority_name,
        before.updated_at,
    )
