"""Submission leases on Job (launcher/services/leases.py), and usage external ids that no
longer embed the facility's slug: `<slug>:<id>` becomes `<facility pk>/<id>` (a slug may be
renamed, and a renamed slug made the next ingestion charge the same runs again)."""

from django.db import migrations, models

SOURCES = ("slurm", "local")


def _rewrite(apps, *, forward: bool) -> None:
    UsageRecord = apps.get_model("allocations", "UsageRecord")
    records = UsageRecord.objects.filter(source__in=SOURCES).select_related("allocation__facility")
    changed = []
    for record in records.iterator(chunk_size=2000):
        facility = record.allocation.facility
        old, new = f"{facility.slug}:", f"{facility.pk}/"
        if not forward:
            old, new = new, old
        if record.external_id.startswith(old):
            record.external_id = new + record.external_id[len(old) :]
            changed.append(record)
    UsageRecord.objects.bulk_update(changed, ["external_id"], batch_size=2000)


def forwards(apps, schema_editor):
    _rewrite(apps, forward=True)


def backwards(apps, schema_editor):
    _rewrite(apps, forward=False)


class Migration(migrations.Migration):
    dependencies = [
        ("launcher", "0004_merge_job_measurement_and_utilisation"),
        ("allocations", "0008_merge_datasets_and_usage_ledger"),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="submit_attempts",
            field=models.PositiveSmallIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="job",
            name="submit_lease_owner",
            field=models.CharField(blank=True, max_length=32),
        ),
        migrations.AddField(
            model_name="job",
            name="submit_lease_until",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="job",
            name="submit_next_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="job",
            name="submit_deadline",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(forwards, backwards),
    ]
