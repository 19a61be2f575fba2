"""JobMonth loses its size (GPUs) from its key: one row an allocation a month, a third of the
rows the report sums at every view; the sizes move to JobMonthSize. The rollups are derived
data: their rows are dropped here and the next hourly pass (launcher.roll_job_months), finding
no rolled month, rewrites every settled month."""

import django.db.models.deletion
from django.db import migrations, models


def drop_rollups(apps, schema_editor):
    apps.get_model("launcher", "JobMonth").objects.all().delete()
    apps.get_model("launcher", "RolledMonth").objects.all().delete()


class Migration(migrations.Migration):
    dependencies = [("allocations", "0016_allocation_created"), ("launcher", "0012_job_waits")]

    operations = [
        migrations.RunPython(drop_rollups, migrations.RunPython.noop),
        migrations.RemoveConstraint(model_name="jobmonth", name="job_month_unique"),
        migrations.RemoveField(model_name="jobmonth", name="gpus"),
        migrations.AddConstraint(
            model_name="jobmonth",
            constraint=models.UniqueConstraint(
                fields=("allocation", "month"), name="job_month_unique"
            ),
        ),
        migrations.CreateModel(
            name="JobMonthSize",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("month", models.DateField()),
                ("gpus", models.PositiveSmallIntegerField()),
                ("jobs", models.PositiveIntegerField(default=0)),
                ("gpu_seconds", models.BigIntegerField(default=0)),
                (
                    "allocation",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="job_month_sizes",
                        to="allocations.allocation",
                    ),
                ),
            ],
            options={
                "indexes": [
                    models.Index(fields=["month", "allocation"], name="job_month_size_month")
                ],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("allocation", "month", "gpus"), name="job_month_size_unique"
                    )
                ],
            },
        ),
    ]
