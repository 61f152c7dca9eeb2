"""The benchmark's ``/floor`` exists only under the bench settings (issue 9, point 9)."""

from __future__ import annotations

import pytest
from django.test import Client


@pytest.mark.django_db
def test_production_urls_have_no_floor():
    assert Client().get("/floor").status_code == 404


@pytest.mark.django_db
def test_the_bench_urls_serve_the_floor_beside_the_production_api(settings):
    settings.ROOT_URLCONF = "bench.urls"

    assert Client().get("/floor").json() == {"status": "ok"}
    assert Client().get("/healthz").json() == {"status": "ok"}
