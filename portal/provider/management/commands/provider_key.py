"""manage.py provider_key: create the provider's RS256 key file once (make run, make services)."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand

from portal.provider.keys import ensure_key


class Command(BaseCommand):
    help = "Create the OpenID Connect provider's signing key (PORTAL_PROVIDER_KEY_FILE) if absent."

    def handle(self, *args, **options):
        path = settings.PORTAL_PROVIDER_KEY_FILE
        self.stdout.write(f"{'created' if ensure_key(path) else 'kept'} {path}")
