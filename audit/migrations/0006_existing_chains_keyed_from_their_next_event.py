"""Every existing chain is keyed from its next event on, and that start is sealed with
the current audit key, so that no chain can later pass for one never keyed (rewritten
with plain hashes and the start moved past its end). The events already written keep
their plain links: rewriting them would rewrite history (docs/decisions/0019).

The seal needs the key, which lives in the settings, not in the database; the functions
used are the documented derivation and seal (audit.keys, audit.chain)."""

from django.db import migrations

from audit.chain import boundary_seal
from audit.keys import keyring


def key_existing_chains(apps, schema_editor):
    head_model = apps.get_model("audit", "AuditChainHead")
    current = keyring().current
    for head in head_model.objects.filter(keyed_from__isnull=True).iterator():
        head.keyed_from = head.last_seq + 1
        head.seal = boundary_seal(
            key=current.secret, tenant_id=head.tenant_id, keyed_from=head.keyed_from
        )
        head.seal_key_id = current.key_id
        head.save(update_fields=["keyed_from", "seal", "seal_key_id"])


class Migration(migrations.Migration):
    dependencies = [("audit", "0005_audit_chain_keyed_outside_the_database")]

    operations = [migrations.RunPython(key_existing_chains, migrations.RunPython.noop)]
