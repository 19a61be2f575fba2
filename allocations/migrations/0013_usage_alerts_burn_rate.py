import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models

import allocations.models.catalogue

THRESHOLD_COMMENT = "of the granted GPU-hours used"


def record_past_alerts(apps, schema_editor):
    """Give the threshold alerts already sent their UsageAlert record, so the weekly digest
    (which now finds alerts by their record, not by the words of their comment) still lists
    the ones of the week the migration runs in."""
    ContentType = apps.get_model("contenttypes", "ContentType")
    Event = apps.get_model("allocations", "Event")
    Allocation = apps.get_model("allocations", "Allocation")
    UsageAlert = apps.get_model("allocations", "UsageAlert")
    kind = ContentType.objects.filter(app_label="allocations", model="allocation").first()
    if kind is None:
        return
    events = Event.objects.filter(content_type=kind, comment__contains=THRESHOLD_COMMENT)
    existing = set(Allocation.objects.values_list("pk", flat=True))
    rows = []
    for event in events.iterator():
        head = event.comment.split("%", 1)[0]
        if event.object_id not in existing or not head.isdigit():
            continue
        rows.append(
            UsageAlert(
                allocation_id=event.object_id,
                kind="threshold",
                thresholds=[int(head)],
                event=event,
                created_at=event.created_at,
            )
        )
    UsageAlert.objects.bulk_create(rows, batch_size=500)


class Migration(migrations.Migration):
    dependencies = [("allocations", "0012_backend_names_from_registry")]

    operations = [
        migrations.AddField(
            model_name="allocation",
            name="projection_alerted_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="facility",
            name="alert_thresholds",
            field=models.JSONField(
                default=allocations.models.catalogue.default_alert_thresholds,
                help_text="Whole percents, ascending, e.g. [50, 80, 95, 100].",
                validators=[allocations.models.catalogue.validate_alert_thresholds],
                verbose_name="usage alert thresholds (%)",
            ),
        ),
        migrations.CreateModel(
            name="UsageAlert",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "kind",
                    models.CharField(
                        choices=[
                            ("threshold", "Percent of the grant used"),
                            ("projection", "Projected to run out early"),
                        ],
                        max_length=12,
                    ),
                ),
                ("thresholds", models.JSONField(blank=True, default=list)),
                ("runs_out_on", models.DateField(blank=True, null=True)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("emailed_to", models.JSONField(blank=True, default=list)),
                ("emailed_at", models.DateTimeField(blank=True, null=True)),
                (
                    "allocation",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="usage_alerts",
                        to="allocations.allocation",
                    ),
                ),
                (
                    "event",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="usage_alert",
                        to="allocations.event",
                    ),
                ),
            ],
            options={"ordering": ["created_at", "id"]},
        ),
        migrations.RunPython(record_past_alerts, migrations.RunPython.noop),
    ]
