"""Issue 42, point 8: a rewritten audit event is found without trusting the database.

A database superuser changed an event's actor to ``user:mallory``, recomputed every hash
after it and the chain head, and verification said ok. The chain is now keyed with an
HMAC under a key held outside the database (docs/decisions/0019): whoever has the code
and the database but not the key cannot recompute it, however consistent the rewrite."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.apps import apps
from django.core.exceptions import ImproperlyConfigured
from django.core.management import CommandError, call_command
from django.db import transaction
from django.test import override_settings
from django.utils import timezone

from audit.chain import GENESIS_HASH, event_hash, keyed_event_hash
from audit.keys import derived_key, keyring, parse_audit_keys
from audit.models import AuditChainHead, AuditEvent
from audit.services import audit_append
from core.models import Tenant
from tests.api.support import create_entity, record_source, tamper

KID1 = "kid1:" + "1" * 40
KID2 = "kid2:" + "2" * 40

Forge = Callable[[AuditEvent, str], str]


def _plain_sha256(event: AuditEvent, prev_hash: str) -> str:
    """What the code computed before keying, and what anyone with the code can compute."""
    return event_hash(
        prev_hash=prev_hash, seq=event.seq, at=event.at, actor=event.actor,
        action=event.action, target_type=event.target_type, target_id=event.target_id,
        data=event.data,
    )  # fmt: skip


def _hmac_with_a_guessed_key(event: AuditEvent, prev_hash: str) -> str:
    return keyed_event_hash(
        key=b"mallory's guess of the audit key", tenant_id=event.tenant_id,
        prev_hash=prev_hash, seq=event.seq, at=event.at, actor=event.actor,
        action=event.action, target_type=event.target_type, target_id=event.target_id,
        data=event.data,
    )  # fmt: skip


def _rewrite_from(
    tenant: Tenant,
    seq: int,
    forge: Forge,
    *,
    actor: str = "user:mallory",
    key_id: str | None = None,
) -> None:
    """Mallory's rewrite: the actor of event ``seq`` changed, then every hash from it to the
    end recomputed and relinked, and the head moved to the new last hash, all in SQL."""
    events = list(AuditEvent.objects.filter(tenant=tenant, seq__gte=seq).order_by("seq"))
    prev = events[0].prev_hash
    for event in events:
        if event.seq == seq:
            event.actor = actor
        if key_id is not None:
            event.key_id = key_id
        forged = forge(event, prev)
        tamper(
            "UPDATE audit_auditevent SET actor = %s, prev_hash = %s, hash = %s, key_id = %s"
            " WHERE id = %s",
            [event.actor, prev, forged, event.key_id, event.pk],
        )
        prev = forged
    tamper("UPDATE audit_auditchainhead SET last_hash = %s WHERE tenant_id = %s", [prev, tenant.pk])


def _consistent_as_far_as_the_database_tells(tenant: Tenant) -> bool:
    events = list(AuditEvent.objects.filter(tenant=tenant).order_by("seq"))
    links = [e.prev_hash for e in events] == [GENESIS_HASH] + [e.hash for e in events[:-1]]
    return links and AuditChainHead.objects.get(tenant=tenant).last_hash == events[-1].hash


def _api_verdict(world: Any, who: str = "rita") -> dict[str, Any]:
    return dict(world.client(who).get("/api/v1/audit/verify").json())


def _command(*args: str) -> tuple[str, CommandError | None]:
    out = StringIO()
    try:
        call_command("verify_audit", *args, stdout=out)
    except CommandError as exc:
        return out.getvalue(), exc
    return out.getvalue(), None


@pytest.fixture
def trail(world) -> int:
    """Events written through the services: the tenant's and personas', then the agent's."""
    agent = world.client("agent")
    record_source(agent)
    create_entity(agent)
    record_source(agent, content="Deliver to the office.")
    return AuditChainHead.objects.get(tenant=world.tenant).last_seq


@pytest.mark.parametrize("forge", [_plain_sha256, _hmac_with_a_guessed_key])
def test_actor_rewritten_by_a_database_superuser_is_named_by_verify(world, trail: int, forge):
    victim = AuditEvent.objects.get(tenant=world.tenant, action="entity.created")
    assert victim.actor == "agent:bot"

    _rewrite_from(world.tenant, victim.seq, forge)

    assert _consistent_as_far_as_the_database_tells(world.tenant)
    assert AuditEvent.objects.get(pk=victim.pk).actor == "user:mallory"
    assert _api_verdict(world) == {
        "ok": False,
        "events_checked": victim.seq - 1,
        "first_bad_seq": victim.seq,
        "reason": "hash",
        "keyed_from": 1,
        "missing_key_ids": [],
    }
    out, error = _command()
    assert error is not None and error.returncode == 1 and "acme" in str(error)
    assert f"acme: BROKEN at seq {victim.seq}: this event no longer matches its hash" in out
    assert "globex: ok" in out


def test_a_rewrite_that_also_drops_the_key_ids_is_named_at_the_first_unkeyed_event(
    world, trail: int
):
    """Mallory makes the events from the victim on look written before keying: nothing keyed
    follows them, so nothing vouches for them."""
    victim = AuditEvent.objects.get(tenant=world.tenant, action="entity.created")

    _rewrite_from(world.tenant, victim.seq, _plain_sha256, key_id="")

    verdict = _api_verdict(world)
    assert (verdict["ok"], verdict["first_bad_seq"], verdict["reason"]) == (
        False, victim.seq, "unbound",
    )  # fmt: skip
    assert verdict["events_checked"] == victim.seq - 1


def test_a_rewrite_of_the_whole_chain_as_never_keyed_is_found_by_the_seal(world, trail: int):
    """Every event rewritten with plain hashes and the start of keying moved past the end:
    the head's seal, an HMAC of where keying starts, no longer matches."""
    _rewrite_from(world.tenant, 1, _plain_sha256, key_id="")
    tamper(
        "UPDATE audit_auditchainhead SET keyed_from = %s WHERE tenant_id = %s",
        [trail + 1, world.tenant.pk],
    )

    verdict = _api_verdict(world)
    assert (verdict["ok"], verdict["first_bad_seq"], verdict["reason"]) == (False, 1, "seal")
    tamper(
        "UPDATE audit_auditchainhead SET keyed_from = NULL, seal = '', seal_key_id = ''"
        " WHERE tenant_id = %s",
        [world.tenant.pk],
    )
    assert _api_verdict(world)["reason"] == "seal"


def test_an_event_moved_from_another_tenants_chain_does_not_verify(world, trail: int):
    """Both chains are keyed with the same key; the HMAC covers the tenant as well."""
    mine = AuditEvent.objects.get(tenant=world.tenant, seq=1)
    theirs = AuditEvent.objects.get(tenant=world.other_tenant, seq=1)
    tamper(
        "UPDATE audit_auditevent SET at = %s, actor = %s, action = %s, target_type = %s,"
        " target_id = %s, data = %s, hash = %s WHERE id = %s",
        [
            theirs.at, theirs.actor, theirs.action, theirs.target_type, theirs.target_id,
            json.dumps(theirs.data), theirs.hash, mine.pk,
        ],
    )  # fmt: skip
    tamper(
        "UPDATE audit_auditevent SET prev_hash = %s WHERE tenant_id = %s AND seq = 2",
        [theirs.hash, world.tenant.pk],
    )

    assert _api_verdict(world)["first_bad_seq"] == 1


def test_events_keyed_under_a_rotated_out_key_verify_while_it_is_kept(world, trail: int):
    agent = world.client("agent")
    with override_settings(MEMGOV_AUDIT_KEYS=KID1):
        record_source(agent, content="under kid1")
    with override_settings(MEMGOV_AUDIT_KEYS=f"{KID2},{KID1}"):
        record_source(agent, content="under kid2")
        assert _api_verdict(world)["ok"] is True
        out, error = _command("--tenant", "acme")
    keys = list(AuditEvent.objects.filter(tenant=world.tenant, seq__gt=trail).order_by("seq"))

    assert [e.key_id for e in keys] == ["kid1", "kid2"]
    assert error is None and out.startswith(f"acme: ok, {trail + 2} events checked")
    assert (
        world.client("rita").get("/api/v1/audit?limit=200").json()["results"][-1]["key_id"]
        == "kid2"
    )


def test_a_dropped_key_is_named_as_missing_not_as_tampering(world, trail: int):
    agent = world.client("agent")
    with override_settings(MEMGOV_AUDIT_KEYS=KID1):
        record_source(agent, content="under kid1")
    with override_settings(MEMGOV_AUDIT_KEYS=KID2):  # kid1 no longer kept
        record_source(agent, content="under kid2")
        verdict = _api_verdict(world)
        out, error = _command("--tenant", "acme")

    assert verdict == {
        "ok": False,
        "events_checked": trail + 2,
        "first_bad_seq": None,
        "reason": "key_missing",
        "keyed_from": 1,
        "missing_key_ids": ["kid1"],
    }
    assert error is not None
    assert "acme: CANNOT VERIFY: key kid1 not configured" in out
    assert "BROKEN" not in out


def test_a_rewrite_under_a_kept_key_is_still_found_when_another_key_is_missing(world, trail: int):
    agent = world.client("agent")
    with override_settings(MEMGOV_AUDIT_KEYS=KID1):
        record_source(agent, content="under kid1")
    with override_settings(MEMGOV_AUDIT_KEYS=KID2):
        record_source(agent, content="under kid2")
        _rewrite_from(world.tenant, trail + 2, _plain_sha256)
        verdict = _api_verdict(world)

    assert (verdict["first_bad_seq"], verdict["reason"], verdict["missing_key_ids"]) == (
        trail + 2, "hash", ["kid1"],
    )  # fmt: skip


def test_a_rotated_secret_key_keeps_the_chain_verifiable_while_it_is_a_fallback(
    world, trail: int, settings
):
    old = derived_key(settings.SECRET_KEY).key_id
    settings.SECRET_KEY_FALLBACKS = [settings.SECRET_KEY]
    settings.SECRET_KEY = "a-new-secret-key-after-rotation"
    record_source(world.client("agent"), content="under the new secret key")

    assert _api_verdict(world)["ok"] is True
    assert AuditEvent.objects.get(tenant=world.tenant, seq=trail + 1).key_id != old

    settings.SECRET_KEY_FALLBACKS = []
    verdict = _api_verdict(world)
    assert (verdict["reason"], verdict["missing_key_ids"]) == ("key_missing", [old])


def _pre_keying_chain(slug: str, length: int) -> Tenant:
    """A chain as the previous release wrote it: plain links, a head without keyed_from."""
    tenant = Tenant.objects.create(slug=slug, name=slug.title())
    prev = GENESIS_HASH
    for seq in range(1, length + 1):
        event = AuditEvent(
            tenant=tenant, seq=seq, at=timezone.now(), actor="operator", action="test.old",
            target_type="test", target_id=str(seq), data={"n": seq}, prev_hash=prev, key_id="",
        )  # fmt: skip
        event.hash = _plain_sha256(event, prev)
        event.save()
        prev = event.hash
    head = AuditChainHead(tenant=tenant, last_seq=length, last_hash=prev)
    head.keyed_from, head.seal, head.seal_key_id = None, "", ""
    head.save(force_insert=True)
    return tenant


def _key_existing_chains() -> None:
    """Migration 0006, as ``migrate`` runs it on the upgrade."""
    migration = importlib.import_module(
        "audit.migrations.0006_existing_chains_keyed_from_their_next_event"
    )
    migration.key_existing_chains(apps, None)


def _append(tenant: Tenant, n: int) -> None:
    with transaction.atomic():
        audit_append(
            tenant=tenant, actor="agent:bot", action="test.new", target_type="test",
            target_id=str(n),
        )  # fmt: skip


def test_a_chain_written_before_keying_keeps_verifying_and_is_keyed_from_its_next_event(db):
    tenant = _pre_keying_chain("initech", 4)

    _key_existing_chains()
    head = AuditChainHead.objects.get(tenant=tenant)
    out, error = _command("--tenant", "initech")

    assert (head.keyed_from, head.seal_key_id) == (5, keyring().current.key_id)
    assert error is None and out.startswith("initech: ok, 4 events checked; checkpoint ")
    _append(tenant, 5)
    _append(tenant, 6)
    events = AuditEvent.objects.filter(tenant=tenant).order_by("seq")
    assert [e.key_id for e in events] == ["", "", "", "", *[keyring().current.key_id] * 2]
    assert _command("--tenant", "initech")[1] is None


def test_a_rewrite_before_the_switch_shows_at_the_first_keyed_event(db):
    """Events before keying are only as safe as before on their own, but the first keyed
    event's HMAC covers the last plain hash: a rewrite of them made after the switch breaks
    it. (One made before the upgrade is not found.)"""
    tenant = _pre_keying_chain("initech", 4)
    _key_existing_chains()
    _append(tenant, 5)
    first_keyed = AuditEvent.objects.get(tenant=tenant, seq=5)

    prev = AuditEvent.objects.get(tenant=tenant, seq=1).hash
    for event in AuditEvent.objects.filter(tenant=tenant, seq__in=[2, 3, 4]).order_by("seq"):
        event.actor = "user:mallory" if event.seq == 2 else event.actor
        forged = _plain_sha256(event, prev)
        tamper(
            "UPDATE audit_auditevent SET actor = %s, prev_hash = %s, hash = %s WHERE id = %s",
            [event.actor, prev, forged, event.pk],
        )
        prev = forged
    tamper("UPDATE audit_auditevent SET prev_hash = %s WHERE id = %s", [prev, first_keyed.pk])

    assert _consistent_as_far_as_the_database_tells(tenant)
    out, error = _command("--tenant", "initech")
    assert error is not None
    assert "initech: BROKEN at seq 5: this event no longer matches its hash" in out


def test_an_event_of_the_previous_release_during_the_rollout_verifies_once_a_keyed_one_follows(
    db,
):
    """During the rollout that brings keying, pods of the previous release still append
    plain events after ``keyed_from``. Until a keyed event binds them, nothing vouches for
    them; afterwards they verify."""
    tenant = _pre_keying_chain("initech", 2)
    _key_existing_chains()
    _append(tenant, 3)
    head = AuditChainHead.objects.get(tenant=tenant)
    old_release = AuditEvent(
        tenant=tenant, seq=4, at=timezone.now(), actor="agent:old", action="test.old",
        target_type="test", target_id="4", data={}, prev_hash=head.last_hash, key_id="",
    )  # fmt: skip
    old_release.hash = _plain_sha256(old_release, head.last_hash)
    old_release.save()
    AuditChainHead.objects.filter(tenant=tenant).update(last_seq=4, last_hash=old_release.hash)

    out, error = _command("--tenant", "initech")
    assert error is not None and "initech: BROKEN at seq 4: unkeyed events after keying" in out

    _append(tenant, 5)
    out, error = _command("--tenant", "initech")
    assert error is None and out.startswith("initech: ok, 5 events checked")


def test_a_head_created_by_the_previous_release_is_sealed_by_the_next_append(db):
    tenant = _pre_keying_chain("initech", 0)

    _append(tenant, 1)

    head = AuditChainHead.objects.get(tenant=tenant)
    assert (head.keyed_from, head.last_seq) == (1, 1)
    assert _command("--tenant", "initech")[1] is None


def _checkpoint(out: str, slug: str) -> str:
    """The checkpoint an ok run printed for a tenant, to keep outside the database."""
    line = next(line for line in out.splitlines() if line.startswith(f"{slug}: ok"))
    return line.rsplit("checkpoint ", 1)[1]


def _cut_back_to(tenant: Tenant, seq: int) -> None:
    """The events after ``seq`` deleted, and the head moved back to ``seq``: what a
    superuser can do without the key, and what a restore of an older backup looks like."""
    last = AuditEvent.objects.get(tenant=tenant, seq=seq)
    tamper("DELETE FROM audit_auditevent WHERE tenant_id = %s AND seq > %s", [tenant.pk, seq])
    tamper(
        "UPDATE audit_auditchainhead SET last_seq = %s, last_hash = %s WHERE tenant_id = %s",
        [seq, last.hash, tenant.pk],
    )


def test_newest_events_removed_with_the_head_are_found_only_by_a_kept_checkpoint(world, trail: int):
    out, _ = _command("--tenant", "acme")
    checkpoint = _checkpoint(out, "acme")
    assert checkpoint.startswith(f"acme:{trail}:")

    _cut_back_to(world.tenant, trail - 2)

    assert _command("--tenant", "acme")[1] is None  # the key alone cannot tell
    out, error = _command("--tenant", "acme", "--checkpoint", checkpoint)
    assert error is not None
    assert f"acme: BROKEN: checkpoint seq {trail} is gone, the chain ends at {trail - 2}" in out


def test_an_older_chain_grown_again_past_a_checkpoint_is_found_by_it(world, trail: int):
    """An older database put back, or the newest events cut and new ones appended: the
    chain verifies, but the event at the checkpoint is another one."""
    checkpoint = _checkpoint(_command("--tenant", "acme")[0], "acme")
    _cut_back_to(world.tenant, trail - 1)
    record_source(world.client("agent"), content="after the cut")
    record_source(world.client("agent"), content="after the cut, again")

    out, error = _command("--checkpoint", checkpoint)

    assert error is not None
    assert f"acme: BROKEN at seq {trail}: not the event checkpointed" in out
    assert "globex: ok" in out
    assert _command("--tenant", "globex", "--checkpoint", _checkpoint(out, "globex"))[1] is None


@pytest.mark.parametrize("value", ["acme:12", "acme:x:" + "0" * 64, "acme:1:" + "z" * 64])
def test_a_malformed_checkpoint_is_refused(world, value: str):
    with pytest.raises(CommandError, match="TENANT:SEQ:HASH"):
        call_command("verify_audit", "--checkpoint", value, stdout=StringIO())


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("kid1", "write it as kid:secret"),
        ("kid 1:" + "x" * 40, "write it as kid:secret"),
        ("kid1:short", "at least 32 characters"),
        (f"{KID1},kid1:" + "y" * 40, "listed twice"),
        ("sk-abc:" + "x" * 40, "derived keys only"),
    ],
)
def test_malformed_audit_keys_stop_the_process_with_what_to_fix(raw: str, message: str):
    with pytest.raises(ImproperlyConfigured, match=message):
        parse_audit_keys(raw)


def test_a_process_with_malformed_audit_keys_does_not_start():
    """Found at start (conventions, rule 17), not at the first write that needs a key."""
    started = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=Path(__file__).resolve().parents[2],
        env={**os.environ, "MEMGOV_AUDIT_KEYS": "kid1:too-short"},
        capture_output=True,
        text=True,
        check=False,
    )

    assert started.returncode != 0
    assert "MEMGOV_AUDIT_KEYS, key 1 (kid1): the secret must be at least 32" in started.stderr


def test_audit_keys_are_read_in_order_the_first_current():
    keys = parse_audit_keys(f" {KID2} , {KID1} ,")

    assert [k.key_id for k in keys] == ["kid2", "kid1"]
    assert keys[0].secret == b"2" * 40


def test_without_the_setting_the_key_is_derived_from_secret_key(settings):
    settings.MEMGOV_AUDIT_KEYS = ""
    expected = derived_key(settings.SECRET_KEY)

    assert keyring().current == expected
    assert expected.key_id.startswith("sk-") and len(expected.key_id) == 13
    assert derived_key("another secret").key_id != expected.key_id
