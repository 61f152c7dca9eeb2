"""Search by meaning inside governance (issue 45): a paraphrase finds the fact its words do
not say, a question nothing answers still finds nothing, exact words keep their answer,
and meaning never reaches what the caller may not see — another tenant's, a label's, an
erased subject's. Vectors are made by the worker through the outbox, never in a request.

The same tests run on SQLite (sqlite-vec) from ``test_semantic_on_sqlite.py``."""

from __future__ import annotations

from typing import Any

import pytest

from accounts import tenancy
from memory import semantic
from memory.models import Embedding
from tests.api.support import preference_body, record_source
from tests.approvals.support import person
from tests.conftest import World
from tests.discovery.support import get
from tests.semantic.support import Shop, build_shop, entity, fact, found_ids, search

pytestmark = pytest.mark.django_db


@pytest.fixture
def shop(world: World, django_capture_on_commit_callbacks: Any) -> Shop:
    return build_shop(world, django_capture_on_commit_callbacks)


def test_a_paraphrase_finds_the_fact_its_words_do_not_say(world: World, shop: Shop):
    body = search(world, "where do Dana Kim's parcels go")

    assert body["match"] == "some"
    assert found_ids(body)[0] == shop.office
    first = body["results"][0]
    assert "semantic" in first["matched"]
    assert first["type"] == "memory" and first["status"] == "active"


def test_a_question_in_other_words_ranks_the_fact_that_answers_it_first(world: World, shop: Shop):
    body = search(world, "is there food Marcus must avoid")

    assert found_ids(body)[:1] == [shop.allergy]
    assert "semantic" in body["results"][0]["matched"]


def test_a_question_nothing_answers_still_finds_nothing(world: World, shop: Shop):
    for question in ("what is the capital of France", "quarterly revenue forecast 2027"):
        assert search(world, question) == {"results": [], "next": None, "match": "all"}


def test_exact_words_keep_their_answer_and_their_order(world: World, shop: Shop):
    body = search(world, "ORD-1001")

    assert body["match"] == "all"
    assert found_ids(body)[0] == shop.order_entity
    assert all("semantic" not in r["matched"] or r["type"] != "source" for r in body["results"])


def test_a_hidden_fact_is_neither_ranked_nor_counted_by_meaning(
    world: World, shop: Shop, django_capture_on_commit_callbacks: Any
):
    world.keys["counsel"] = tenancy.api_key_create(
        tenant=world.tenant, agent_name="counsel", labels=["legal"]
    )[1]
    legal = record_source(
        world.client("counsel"), content="Dana is suing us over lost parcels.", visibility=["legal"]
    )
    hidden = fact(
        world,
        django_capture_on_commit_callbacks,
        preference_body(
            shop.dana,
            legal,
            field="legal_dispute",
            value="lawsuit over lost parcels",
            statement="Dana Kim is in a legal dispute with us about lost parcels.",
            owner="rita",
        ),
        who="counsel",
    )

    staff = search(world, "lawsuit about missing packages")
    counsel = search(world, "lawsuit about missing packages", who="counsel")

    assert hidden not in found_ids(staff)
    assert "legal" not in str(staff)
    assert found_ids(counsel)[0] == hidden


def test_another_tenants_facts_are_never_near(
    world: World, shop: Shop, django_capture_on_commit_callbacks: Any
):
    zed = world.client("zed")
    theirs = entity(world, django_capture_on_commit_callbacks, "Dana Kim", who="zed")
    said = record_source(zed, content="Parcels go to the back door.")
    fact(
        world,
        django_capture_on_commit_callbacks,
        preference_body(theirs, said, statement="Parcels go to the back door.", owner="zed"),
        who="zed",
    )

    mine = search(world, "where do Dana Kim's parcels go")
    other = search(world, "where do Dana Kim's parcels go", who="zed")

    assert theirs not in found_ids(mine)
    assert shop.office not in found_ids(other) and shop.dana not in found_ids(other)


def test_vectors_are_made_after_commit_by_the_worker_not_in_the_request(world: World):
    agent = world.client("agent")
    response = agent.post(
        "/api/v1/entities", {"kind": "customer", "name": "Priya Raman"}, "json"
    )  # no on-commit callbacks run: nothing is dispatched to a worker

    assert response.status_code == 201
    assert not Embedding.objects.filter(entity_id=response.json()["id"]).exists()
    assert semantic.progress().embedded < semantic.progress().total


def test_the_sweeper_embeds_what_the_outbox_did_not(world: World):
    agent = world.client("agent")
    made = agent.post("/api/v1/entities", {"kind": "customer", "name": "Priya Raman"}, "json")

    assert semantic.embed_missing() >= 1
    assert Embedding.objects.filter(entity_id=made.json()["id"]).count() == 1
    assert semantic.progress().embedded == semantic.progress().total


def test_a_misspelled_name_is_a_candidate_by_meaning_never_a_match(world: World, shop: Shop):
    response = world.client("agent").post("/api/v1/entities/match", {"name": "Dana Kin"}, "json")

    assert response.status_code == 200
    body = response.json()
    assert body["decision"] == "ambiguous"
    assert {"id": shop.dana, "matched_on": "semantic"}.items() <= body["candidates"][0].items()


def test_a_name_in_other_letters_is_a_candidate_never_a_match(
    world: World, django_capture_on_commit_callbacks: Any
):
    wang = entity(world, django_capture_on_commit_callbacks, "Wang Wei")
    chinese = entity(world, django_capture_on_commit_callbacks, "李娜")
    agent = world.client("agent")

    by_hanzi = agent.post("/api/v1/entities/match", {"name": "王伟"}, "json").json()
    by_latin = agent.post("/api/v1/entities/match", {"name": "Li Na"}, "json").json()

    assert by_hanzi["decision"] == "ambiguous"
    assert by_hanzi["candidates"][0] == {
        "id": wang,
        "kind": "customer",
        "name": "Wang Wei",
        "matched_on": "transliteration",
    }
    assert by_latin["decision"] == "ambiguous"
    assert by_latin["candidates"][0]["id"] == chinese
    assert by_latin["candidates"][0]["matched_on"] == "transliteration"


def test_readiness_says_semantic_retrieval_is_on(client: Any, world: World):
    response = client.get("/readyz")

    assert response.status_code == 200
    assert response.json()["semantic"] == "on"


def test_mcp_and_rest_search_by_meaning_alike(world: World, shop: Shop):
    from agent_interface.discovery import searched  # the function the MCP tool calls

    rest = search(world, "where do Dana Kim's parcels go")
    mcp = searched(world.principal("agent"), {"q": "where do Dana Kim's parcels go"})

    assert found_ids(rest) == [r["id"] for r in mcp.results]
    assert mcp.match == rest["match"]


def test_a_subject_filter_keeps_meaning_to_that_subject(world: World, shop: Shop):
    body = get(world, "agent", "/search", q="parcels", subject=shop.sarah).json()

    assert shop.office not in found_ids(body)


def test_a_context_mention_in_other_letters_is_asked_about_never_guessed(
    world: World, django_capture_on_commit_callbacks: Any
):
    wang = entity(world, django_capture_on_commit_callbacks, "Wang Wei")

    response = world.client("agent").post("/api/v1/context", {"subjects": ["王伟"]}, "json")

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["subjects"][0]["decision"] == "ambiguous"
    assert [o["id"] for o in body["ask"][0]["options"]] == [wang]
    assert body["facts"] == []


def test_erasure_deletes_her_vectors_before_it_answers(world: World, shop: Shop):
    from memory.models import Embedding

    person(world, "erin", "erase_subject")
    assert Embedding.objects.filter(entity_id=shop.dana).exists()
    response = world.client("erin").post(
        f"/api/v1/entities/{shop.dana}/erase", {"reason": "privacy request"}, "json"
    )

    assert response.status_code == 202, response.content
    assert not Embedding.objects.filter(entity_id=shop.dana).exists()
    assert not Embedding.objects.filter(version__item__subject_id=shop.dana).exists()
    assert shop.office not in found_ids(search(world, "where do Dana Kim's parcels go"))


def test_a_name_in_other_letters_is_followed_to_that_persons_facts(
    world: World, django_capture_on_commit_callbacks: Any
):
    wang = entity(world, django_capture_on_commit_callbacks, "Wang Wei")
    said = record_source(world.client("agent"), content="Wang: e-mail me the invoices.")
    billing = fact(
        world,
        django_capture_on_commit_callbacks,
        preference_body(
            wang,
            said,
            field="billing_channel",
            value="email",
            statement="Invoices by e-mail only.",
        ),
    )

    by_name = search(world, "王伟")
    asked = search(world, "how is 王伟 billed")

    assert found_ids(by_name)[:2] == [wang, billing]
    assert found_ids(asked)[:1] == [billing]
