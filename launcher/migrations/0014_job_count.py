"""The total of jobs, kept by PostgreSQL (launcher/models/job_count.py): statement-level
triggers on launcher_job add each INSERT's and DELETE's rows (their transition tables) to the
writing backend's shard and empty the shards on TRUNCATE; the shards start from a COUNT of the
rows already there. Other databases (SQLite for the unit tier) keep no total: the list counts."""

from django.db import migrations, models

SHARDS = 64  # as launcher/models/job_count.py says (a migration keeps its own figures)

CREATE = f"""
CREATE FUNCTION launcher_job_count_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO launcher_jobcount (shard, jobs)
    SELECT pg_backend_pid() % {SHARDS},
           CASE WHEN TG_OP = 'INSERT' THEN count(*) ELSE -count(*) END
    FROM job_rows
    ON CONFLICT (shard) DO UPDATE SET jobs = launcher_jobcount.jobs + EXCLUDED.jobs;
    RETURN NULL;
END $$;

CREATE FUNCTION launcher_job_count_empty() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM launcher_jobcount;
    RETURN NULL;
END $$;

CREATE TRIGGER launcher_job_count_insert AFTER INSERT ON launcher_job
    REFERENCING NEW TABLE AS job_rows FOR EACH STATEMENT
    EXECUTE FUNCTION launcher_job_count_add();
CREATE TRIGGER launcher_job_count_delete AFTER DELETE ON launcher_job
    REFERENCING OLD TABLE AS job_rows FOR EACH STATEMENT
    EXECUTE FUNCTION launcher_job_count_add();
CREATE TRIGGER launcher_job_count_truncate AFTER TRUNCATE ON launcher_job
    FOR EACH STATEMENT EXECUTE FUNCTION launcher_job_count_empty();

DELETE FROM launcher_jobcount;
INSERT INTO launcher_jobcount (shard, jobs) SELECT 0, count(*) FROM launcher_job;
"""

DROP = """
DROP TRIGGER IF EXISTS launcher_job_count_insert ON launcher_job;
DROP TRIGGER IF EXISTS launcher_job_count_delete ON launcher_job;
DROP TRIGGER IF EXISTS launcher_job_count_truncate ON launcher_job;
DROP FUNCTION IF EXISTS launcher_job_count_add();
DROP FUNCTION IF EXISTS launcher_job_count_empty();
"""


def _on_postgresql(sql: str):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql, params=None)

    return run


class Migration(migrations.Migration):
    dependencies = [("launcher", "0013_job_month_sizes")]

    operations = [
        migrations.CreateModel(
            name="JobCount",
            fields=[
                ("shard", models.PositiveSmallIntegerField(primary_key=True, serialize=False)),
                ("jobs", models.BigIntegerField(default=0)),
            ],
        ),
        migrations.RunPython(_on_postgresql(CREATE), _on_postgresql(DROP)),
    ]
