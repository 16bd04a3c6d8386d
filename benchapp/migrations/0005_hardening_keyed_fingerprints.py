"""Re-compute credential fingerprints with the keyed HMAC of benchapp.crypto."""

from django.db import migrations


def refingerprint(apps, schema_editor):
    from benchapp import crypto

    Credential = apps.get_model("benchapp", "Credential")
    for cred in Credential.objects.all().iterator():
        cred.fingerprint = crypto.fingerprint(crypto.decrypt(cred.encrypted))
        cred.save(update_fields=["fingerprint"])


class Migration(migrations.Migration):
    dependencies = [("benchapp", "0004_target_permissions")]
    operations = [migrations.RunPython(refingerprint, migrations.RunPython.noop)]
