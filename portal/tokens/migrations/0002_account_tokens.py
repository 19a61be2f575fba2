"""Account tokens join personal tokens (docs/security.md, "Tokens"):

- `kind` (personal | account) and `password_fingerprint` (a token ends when the password
  changes); existing personal tokens get their owner's current fingerprint.
- DRF's clear-text tokens (`authtoken_token`, from POST auth/token/ before) become hashed account
  tokens that expire PORTAL_ACCOUNT_TOKEN_DAYS after this migration, and their clear rows are
  deleted. Where that table does not exist (a new database) there is nothing to move.
"""

import datetime as dt

from django.conf import settings
from django.db import migrations, models
from django.utils import timezone

from portal.tokens.models import password_fingerprint
from portal.tokens.services import ACCOUNT_TOKEN_NAME, key_hash

DRF_TABLE = "authtoken_token"


def fingerprint_existing(apps, schema_editor):
    PersonalToken = apps.get_model("tokens", "PersonalToken")
    for token in PersonalToken.objects.select_related("user").iterator():
        token.password_fingerprint = password_fingerprint(token.user)
        token.save(update_fields=["password_fingerprint"])


def hash_drf_tokens(apps, schema_editor):
    connection = schema_editor.connection
    if DRF_TABLE not in connection.introspection.table_names():
        return
    PersonalToken = apps.get_model("tokens", "PersonalToken")
    User = apps.get_model(settings.AUTH_USER_MODEL)
    table = connection.ops.quote_name(DRF_TABLE)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {connection.ops.quote_name('key')}, user_id FROM {table}")
        rows = cursor.fetchall()
    now = timezone.now()
    expires = now + dt.timedelta(days=settings.PORTAL_ACCOUNT_TOKEN_DAYS)
    users = User.objects.in_bulk({user_id for _, user_id in rows})
    PersonalToken.objects.bulk_create(
        [
            PersonalToken(
                user=users[user_id],
                kind="account",
                name=ACCOUNT_TOKEN_NAME,
                key_hash=key_hash(key),
                prefix=key[:10],
                password_fingerprint=password_fingerprint(users[user_id]),
                created_at=now,
                expires_at=expires,
            )
            for key, user_id in rows
            if user_id in users
        ]
    )
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {table}")


class Migration(migrations.Migration):
    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("tokens", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="personaltoken",
            name="kind",
            field=models.CharField(
                choices=[("personal", "Personal token"), ("account", "Account token")],
                default="personal",
                max_length=10,
            ),
        ),
        migrations.AddField(
            model_name="personaltoken",
            name="password_fingerprint",
            field=models.CharField(default="", editable=False, max_length=64),
        ),
        migrations.RunPython(fingerprint_existing, migrations.RunPython.noop),
        migrations.RunPython(hash_drf_tokens, migrations.RunPython.noop),
    ]
