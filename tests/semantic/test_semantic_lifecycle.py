"""Semantic retrieval over time (issue 45): another model makes the stored vectors another
space's, so search stops reading them until everything is embedded again, with progress;
a database without the vector column serves lexical search and says ``semantic: off``."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection

from memory import embeddings, semantic, vectors
from memory.models import Embedding
from tests.conftest import World
from tests.semantic.support import Shop, build_shop, found_ids, search

pytestmark = pytest.mark.django_db
PARAPHRASE = "where do Dana Kim's parcels go"


@pytest.fixture
def shop(world: World, django_capture_on_commit_callbacks: Any) -> Shop:
    return build_shop(world, django_capture_on_commit_callbacks)


@pytest.fixture
def switch_model(settings: Any, tmp_path: Path) -> Iterator[Any]:
    """Switches to the same weights in another directory with another configuration
    file: another model as far as the fingerprint can tell."""

    def switch() -> embeddings.Model:
        bundled = embeddings.configured()
        assert bundled is not None
        copy = tmp_path / "model"
        shutil.copytree(bundled.path, copy)
        config = json.loads((copy / "config.json").read_text())
        (copy / "config.json").write_text(json.dumps({**config, "memgov_test": "another"}))
        settings.MEMGOV_EMBEDDING_MODEL = str(copy)
        embeddings.configured.cache_clear()
        model = embeddings.configured()
        assert model is not None and model.name != bundled.name
        return model

    yield switch
    embeddings.configured.cache_clear()


def test_another_model_reads_no_old_vector_until_everything_is_embedded_again(
    world: World, shop: Shop, switch_model: Any
):
    assert found_ids(search(world, PARAPHRASE))[:1] == [shop.office]  # the old model's
    another_model = switch_model()
    out = StringIO()
    if connection.vendor == "postgresql":  # the command builds the new model's index: the
        with connection.cursor() as cursor:  # test's deferred checks go first
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")

    call_command("embed", "--status", stdout=out)
    before = search(world, PARAPHRASE)
    call_command("embed", stdout=out)
    after = search(world, PARAPHRASE)

    progress = out.getvalue().splitlines()
    assert progress[0].startswith(f"{another_model.name}: 0 of ")
    assert progress[-1].endswith("(100%)")
    assert shop.office not in found_ids(before)  # the old vectors are another model's
    assert found_ids(after)[:1] == [shop.office]
    assert Embedding.objects.filter(model=another_model.name).count() == semantic.progress().total


def test_the_sweeper_embeds_for_the_new_model_a_chunk_at_a_time(
    world: World, shop: Shop, switch_model: Any
):
    switch_model()
    total = semantic.progress().total

    assert semantic.embed_missing(limit=3) == 3
    assert semantic.progress().embedded == 3
    assert semantic.embed_missing(limit=total) == total - 3
    assert semantic.progress().embedded == total


@pytest.fixture
def no_vector_column() -> Iterator[None]:
    """The database as one without the extension leaves it (the test's transaction puts
    the column back)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":  # the test's deferred checks, first
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute(f"ALTER TABLE {vectors.TABLE} DROP COLUMN vec")
    vectors.forget_store_state()
    yield
    vectors.forget_store_state()


def test_without_the_vector_column_search_is_lexical_and_readiness_says_so(
    world: World, shop: Shop, client: Any, no_vector_column: None
):
    body = search(world, "Dana Kim")
    paraphrase = search(world, PARAPHRASE)
    ready = client.get("/readyz").json()

    assert found_ids(body)[0] == shop.dana
    assert all("semantic" not in r["matched"] for r in body["results"] + paraphrase["results"])
    assert ready["semantic"] == "off"
    assert semantic.embed_missing() == 0  # nothing to store them in: nothing embedded
