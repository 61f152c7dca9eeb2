"""The client re-enables a disabled webhook endpoint (issue 47, point 3), as the API does:
the answer counts the held events sent and dropped; a second call is a conflict."""

from __future__ import annotations

import pytest
from django.db import transaction

from accounts.grants import permission_grant
from memgov_client.errors import Conflict
from webhooks.services import webhook_disable


def test_a_disabled_webhook_is_enabled_through_the_client(connect, world, settings):
    settings.MEMGOV_WEBHOOK_ALLOW_PRIVATE = True
    permission_grant(user=world.users["rita"], tenant=world.tenant, codename="manage_webhooks")
    rita = connect("rita")
    webhook = rita.create_webhook(url="http://127.0.0.1:9/hooks", events=["memory.activated"])
    with transaction.atomic():
        webhook_disable(endpoint_id=webhook["id"], reason="HTTP 503")

    enabled = rita.enable_webhook(webhook["id"])

    assert (enabled["status"], enabled["held_released"], enabled["held_dropped"]) == (
        "active",
        0,
        0,
    )
    with pytest.raises(Conflict):
        rita.enable_webhook(webhook["id"])
