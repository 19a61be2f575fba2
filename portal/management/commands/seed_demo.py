"""Load the demo world: catalogue, users, a project, and whatever each app contributes.
Idempotent: running it again changes nothing."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand
from django.db import transaction

from allocations.demo import seed_catalogue
from allocations.models import Project, ProjectMembership

DEMO_USERS = [
    # username, first, last, email, flags
    ("researcher", "Rosalind", "Franklin", "researcher@example.org", {}),
    ("pi", "Paul", "Ince", "pi@example.org", {}),
    ("reviewer", "Grace", "Hopper", "reviewer@example.org", {"reviewer": True}),
    ("admin", "Ada", "Lovelace", "admin@example.org", {"is_staff": True, "is_superuser": True}),
]


class Command(BaseCommand):
    help = "Load demo facilities, node types, benchmarks, onboarding chart and users."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--password",
            help="Password for the demo users (default: random, "
            "printed; existing users keep theirs unless given)",
        )

    @transaction.atomic
    def handle(self, *args, password: str | None = None, **options) -> None:
        facilities = seed_catalogue()
        shown = password or secrets.token_urlsafe(9)
        users = self._users(password, shown)
        self._project(users)
        for loader in self._extra_loaders():
            loader()
        self.stdout.write(
            self.style.SUCCESS(
                f"Demo data ready: {len(facilities)} facilities, users "
                f"{', '.join(u for u, *_ in DEMO_USERS)}"
            )
        )
        if password or any(created for created in users.values() if created):
            self.stdout.write(f"Password for new demo users: {shown}")

    def _users(self, password: str | None, shown: str) -> dict:
        User = get_user_model()
        reviewers, _ = Group.objects.get_or_create(name=settings.PORTAL_REVIEWERS_GROUP)
        created_flags: dict = {}
        for username, first, last, email, flags in DEMO_USERS:
            user, created = User.objects.get_or_create(
                username=username, defaults={"first_name": first, "last_name": last, "email": email}
            )
            user.is_staff = flags.get("is_staff", False)
            user.is_superuser = flags.get("is_superuser", False)
            if created or password:
                user.set_password(shown)
            user.save()
            if flags.get("reviewer"):
                user.groups.add(reviewers)
            created_flags[username] = created
        return created_flags

    def _project(self, users: dict) -> None:
        User = get_user_model()
        pi = User.objects.get(username="pi")
        project, _ = Project.objects.get_or_create(
            code="ABC-DEF-001",
            defaults={
                "title": "COVID-19 CT and X-ray classification",
                "research_area": "Transformation of health",
                "pi": pi,
                "pi_name": "Paul Ince",
                "pi_email": "pi@example.org",
            },
        )
        # Their logins on the cluster `make services` starts (members' jobs run as them there,
        # never as the portal's service account; docs/security.md).
        for username, role, login in (
            ("pi", "pi", "slurm-alice"),
            ("researcher", "member", "slurm-bob"),
        ):
            membership, _ = ProjectMembership.objects.get_or_create(
                project=project,
                user=User.objects.get(username=username),
                defaults={"role": role, "cluster_username": login},
            )
            if membership.cluster_username == "portal":  # a demo seeded before that rule
                ProjectMembership.objects.filter(pk=membership.pk).update(cluster_username=login)

    def _extra_loaders(self) -> list:
        """Each app that has demo content exposes `demo.seed()`; load those that exist."""
        from importlib import import_module

        loaders = []
        for module in (
            "benchmarks.demo",
            "portal.onboarding.demo",
            "portal.knowledge.demo",
            "launcher.demo",
            "launcher.cloud.demo",
        ):
            try:
                loaders.append(import_module(module).seed)
            except ModuleNotFoundError as error:
                if not module.startswith(error.name or "-"):
                    raise
        return loaders
