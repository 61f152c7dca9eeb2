"""The benchmark's ``/floor`` exists only under the bench settings (issue 9, point 9)."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.conftest import needs


@pytest.mark.django_db
def test_production_urls_have_no_floor():
    assert Client().get("/floor").status_code == 404


@pytest.mark.django_db
def test_the_bench_urls_serve_the_floor_beside_the_production_api(settings):
    settings.ROOT_URLCONF = "bench.urls"

    assert Client().get("/floor").json() == {"status": "ok"}
    assert Client().get("/healthz").json() == {"status": "ok"}


@needs("redis")
def test_the_checks_floor_reads_the_key_and_nothing_else_of_the_database(
    settings, world, django_assert_num_queries
):
    settings.ROOT_URLCONF = "bench.urls"
    agent = {"Authorization": f"Bearer {world.keys['agent']}"}
    assert Client().post("/floor/checks", headers=agent).json() == {"status": "ok"}

    with django_assert_num_queries(1):  # the key, read on every request as resolve reads it
        answer = Client().post("/floor/checks", headers=agent)

    assert answer.json() == {"status": "ok"}
    unknown = {"Authorization": "Bearer mg_x_y"}
    assert Client().post("/floor/checks", headers=unknown).status_code == 401
