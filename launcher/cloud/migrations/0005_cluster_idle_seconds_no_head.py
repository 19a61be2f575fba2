# Clusters have no head node (issue 21): the head's instance type is dropped and the cluster's
# idle time before it stops loses its old `head_` prefix. A rename keeps every row's value.

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("cloud", "0004_installation")]

    operations = [
        migrations.RemoveField(model_name="cluster", name="head_instance_type"),
        migrations.RenameField(
            model_name="cluster", old_name="head_idle_seconds", new_name="idle_seconds"
        ),
    ]
