"""A personal key carries its person's current labels (docs/design.md, Visibility): a label
granted or withdrawn on the membership applies to the very next resolve by that
person's key, whatever labels the key was created with."""

from __future__ import annotations

from accounts import people
from audit.models import AuditEvent
from core.models import ApiKey
from memory.models import MemoryVersion
from tests.conftest import World
from tests.resolve.conftest import resolve, winners


def test_a_label_granted_to_a_person_reaches_their_key_on_the_next_resolve(
    world: World, dana: str, refund_account: MemoryVersion
):
    nora = world.client("nora")
    before = resolve(nora, subject=dana, fields=["refund_account"])

    people.membership_relabel(user=world.users["nora"], labels=["staff", "finance"])
    granted = resolve(nora, subject=dana, fields=["refund_account"])
    people.membership_relabel(user=world.users["nora"], labels=["staff"])
    withdrawn = resolve(nora, subject=dana, fields=["refund_account"])

    assert before["facts"] == []
    assert winners(granted) == {"refund_account": "DE89 3704"}
    assert withdrawn["facts"] == []
    changes = AuditEvent.objects.filter(action="user.labels_changed", target_id="nora")
    assert [e.data["after"] for e in changes] == [["finance", "staff"], ["staff"]]


def test_the_labels_written_on_a_personal_key_grant_nothing(
    world: World, dana: str, refund_account: MemoryVersion
):
    prefix = world.keys["nora"].split("_")[1]
    ApiKey.objects.filter(prefix=prefix).update(labels=["staff", "finance"])

    body = resolve(world.client("nora"), subject=dana, fields=["refund_account"])

    assert body["facts"] == []
