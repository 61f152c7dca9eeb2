"""Issue 43, points 10 and 14, pinned cheaply with the test client: errors beside the
field with the input kept; statuses, kinds and scopes in a reviewer's words, memories
linked by statement, ids only in id columns."""

from __future__ import annotations

import re
from typing import Any

import pytest

from dashboard.templatetags.memgov_words import detail_words, kind_word, status_word
from memory import proposals
from memory.models import MemoryVersion
from tests.conftest import later
from tests.dashboard.support import Demo


@pytest.fixture
def commit(django_capture_on_commit_callbacks: Any) -> Any:
    return lambda: django_capture_on_commit_callbacks(execute=True)


def test_codes_read_as_words() -> None:
    assert status_word("pending_review") == "waiting for review"
    assert status_word("held_unresolved") == "waiting for an answer"
    assert status_word("checks_failed") == "checks failed"
    assert kind_word("enterprise_rule") == "enterprise rule"
    assert detail_words("abstains: no_applicable_fact") == "abstains: no fact applies"


def test_the_item_page_says_status_kind_and_scope_in_words(demo: Demo) -> None:
    page = demo.client("rita").get(f"/memories/{demo.items['tenant_rule']}/").content.decode()

    assert re.search(r'<span class="badge status-pending_review">waiting for review</span>', page)
    assert '<span class="kind">enterprise rule</span>' in page
    assert "tenant-wide: every context" in page
    assert "every context in the tenant" not in page
    assert ">pending_review<" not in page and ">enterprise_rule<" not in page


def test_the_impact_panel_links_memories_by_statement_not_by_id(demo: Demo) -> None:
    page = demo.client("rita").get(f"/memories/{demo.items['order_a']}/").content.decode()
    impact = page.split('id="impact"')[1].split("</section>")[0]

    home = demo.items["dana_home"]
    assert f'href="/memories/{home}/" title="version 1">“Dana normally wants' in impact
    assert not re.search(r">\s*mem_\w+\s*</a>", impact)


def test_the_queue_filter_names_kinds_and_the_tenant_wide_scope_in_words(demo: Demo) -> None:
    queue = demo.client("rita").get("/").content.decode()

    assert '<option value="enterprise_rule">enterprise rule</option>' in queue
    assert '<option value="tenant=*">tenant-wide</option>' in queue
    assert 'kind">task fact</span>' in queue and ">task_fact<" not in queue


def test_an_add_scenario_error_opens_its_section_and_keeps_the_input(demo: Demo) -> None:
    response = demo.client("rita").post(
        f"/memories/{demo.items['order_a']}/scenarios/",
        {"kind": "inapplicable", "context": "project P-9", "expect": "does_not_apply"},
    )

    assert response.status_code == 422
    section = response.content.decode().split('id="add-scenario"')[1].split("</section>")[0]
    assert "<details open>" in section
    assert "“project P-9” is not dimension=value" in section
    assert 'value="project P-9"' in section


def test_a_link_error_on_the_entities_page_keeps_the_chosen_entity(demo: Demo, commit: Any) -> None:
    order = demo.item("order_a").versions.get().source_ids
    with commit():
        held = proposals.memory_propose(
            principal=demo.agent(),
            data={
                "kind": "task_fact",
                "subject_mention": "Dana",
                "field": "delivery_window",
                "value": "mornings",
                "statement": "Dana wants order-b delivered in the morning.",
                "scope": {"task": "order-b"},
                "owner": "sam",
                "expires_at": later(7),
                "sources": order,
            },
        )
    dana = str(demo.item("order_a").subject_id)
    link = f"/memories/{held.item_id}/link/"

    unconfirmed = demo.client("rita").post(link, {"subject": dana})

    assert unconfirmed.status_code == 422
    form = unconfirmed.content.decode().split(f'action="{link}"')[1].split("</form>")[0]
    assert f'<option value="{dana}" selected>' in form
    assert "Tick the box to confirm what linking does." in form
    assert MemoryVersion.objects.get(pk=held.pk).status == "held_unresolved"
