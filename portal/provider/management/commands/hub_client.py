"""manage.py hub_client: register (or update) the hub's OAuth client from the environment."""

from __future__ import annotations

import os

from django.core.management.base import BaseCommand, CommandError

from portal.provider.services import hub_client_register


class Command(BaseCommand):
    help = (
        "Create or update JupyterHub's OAuth application (JUPYTERHUB_CLIENT_ID, "
        "JUPYTERHUB_CLIENT_SECRET, JUPYTERHUB_URL); safe to run again."
    )

    def add_arguments(self, parser):
        parser.add_argument("--client-id", default=os.environ.get("JUPYTERHUB_CLIENT_ID", ""))
        parser.add_argument(
            "--client-secret", default=os.environ.get("JUPYTERHUB_CLIENT_SECRET", "")
        )
        parser.add_argument(
            "--hub-url", default=os.environ.get("JUPYTERHUB_URL", "http://127.0.0.1:8081")
        )

    def handle(self, *args, client_id, client_secret, hub_url, **options):
        try:
            application, created = hub_client_register(
                client_id=client_id, client_secret=client_secret, hub_url=hub_url
            )
        except ValueError as error:
            raise CommandError(
                f"{error} (JUPYTERHUB_CLIENT_ID, JUPYTERHUB_CLIENT_SECRET)"
            ) from error
        self.stdout.write(
            f"{'created' if created else 'updated'} the hub's client "
            f"{application.client_id} -> {application.redirect_uris}"
        )
