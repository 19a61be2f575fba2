"""Sign-in through the provider: the one write path for accounts that come from it.

First sign-in creates the account from verified claims and links it to `(issuer, sub)`; a
username or email that an unlinked account already holds is refused with an audit event on
that account (never merged). Every sign-in re-reads the roles from the groups claim, so a person
removed from the group at the institution loses the role here at their next sign-in; each
change is audited on the user.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from allocations.services import PolicyError
from allocations.transitions import record_event
from core.errors import Forbidden

from .claims import SignInRefused, groups_from, roles_from, username_from, verified_email
from .models import ExternalIdentity

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User

log = logging.getLogger(__name__)


def identity_sign_in(*, issuer: str, claims: dict) -> User:
    """The portal user for these verified claims (ID token and userinfo, `sub` already checked
    to match), created on first sign-in; all or nothing. Raises SignInRefused: `unverified` (no
    verified email), `username` (the claim is not a login name), `collision` (an unlinked
    account has the username or email; audited on that account), `inactive` (the linked
    account is disabled)."""
    try:
        with transaction.atomic():
            return _sign_in(issuer=issuer, claims=claims)
    except SignInRefused as refused:
        if refused.reason == "collision":
            # After the rollback, so the audit row stays.
            record_event(
                refused.account,
                actor=None,
                from_state="",
                to_state="sign-in refused",
                comment=refused.detail,
            )
        raise


def _sign_in(*, issuer: str, claims: dict) -> User:
    subject = str(claims.get("sub") or "")
    if not subject:
        raise SignInRefused("tampered", "no sub claim")
    email = verified_email(claims)
    identity = (
        ExternalIdentity.objects.select_for_update()
        .select_related("user")
        .filter(issuer=issuer, subject=subject)
        .first()
    )
    if identity is None:
        user = _first_sign_in(issuer=issuer, subject=subject, email=email, claims=claims)
    else:
        user = identity.user
        if not user.is_active:
            raise SignInRefused("inactive", f"{user.get_username()} is disabled")
        _refresh_profile(user, email=email, claims=claims)
        identity.last_sign_in = timezone.now()
        identity.save(update_fields=["last_sign_in"])
    _apply_roles(user, groups_from(claims, settings.OIDC_GROUPS_CLAIM), issuer=issuer)
    return user


def _first_sign_in(*, issuer: str, subject: str, email: str, claims: dict) -> User:
    username = username_from(claims, settings.OIDC_USERNAME_CLAIM)
    users = get_user_model().objects
    existing = users.filter(Q(username__iexact=username) | Q(email__iexact=email)).first()
    if existing is not None:
        what = "username" if existing.get_username().lower() == username.lower() else "email"
        log.warning(
            "OpenID Connect sign-in refused: %s at %s collides with account %s on %s",
            subject,
            issuer,
            existing.pk,
            what,
        )
        raise SignInRefused(
            "collision",
            f"OpenID Connect subject {subject} at {issuer} has this "
            f"account's {what} ({username}, {email}) but is not linked to it; "
            "not merged",
            account=existing,
            what=what,
        )
    user = users.create_user(
        username=username,
        email=email,
        first_name=str(claims.get("given_name") or "")[:150],
        last_name=str(claims.get("family_name") or "")[:150],
    )
    user.set_unusable_password()
    user.save(update_fields=["password"])
    ExternalIdentity.objects.create(user=user, issuer=issuer, subject=subject)
    record_event(
        user,
        actor=None,
        from_state="",
        to_state="created",
        comment=f"first sign-in through {issuer} (subject {subject})",
    )
    return user


def _refresh_profile(user: User, *, email: str, claims: dict) -> None:
    """Names and email follow the provider; an email another account holds is left as it was
    (two accounts never share one address, and nothing is merged)."""
    fields = {
        "first_name": str(claims.get("given_name") or user.first_name)[:150],
        "last_name": str(claims.get("family_name") or user.last_name)[:150],
    }
    if email.lower() != user.email.lower():
        taken = get_user_model().objects.filter(email__iexact=email).exclude(pk=user.pk).exists()
        if taken:
            log.warning(
                "OpenID Connect email %s of user %s belongs to another account; kept %s",
                email,
                user.pk,
                user.email,
            )
        else:
            fields["email"] = email
    changed = [name for name, value in fields.items() if getattr(user, name) != value]
    for name in changed:
        setattr(user, name, fields[name])
    if changed:
        user.save(update_fields=changed)


def _apply_roles(user: User, groups: set[str], *, issuer: str) -> None:
    roles = roles_from(
        groups,
        reviewer_groups=settings.OIDC_REVIEWER_GROUPS,
        staff_groups=settings.OIDC_STAFF_GROUPS,
    )
    why = f"groups at {issuer}: {', '.join(sorted(groups)) or 'none'}"
    if roles.reviewer is not None:
        group, _ = Group.objects.get_or_create(name=settings.PORTAL_REVIEWERS_GROUP)
        has = user.groups.filter(pk=group.pk).exists()
        if roles.reviewer and not has:
            user.groups.add(group)
            record_event(user, actor=None, from_state="", to_state="reviewer granted", comment=why)
        elif has and not roles.reviewer:
            user.groups.remove(group)
            record_event(
                user, actor=None, from_state="reviewer", to_state="reviewer removed", comment=why
            )
    if roles.staff is not None and user.is_staff != roles.staff:
        user.is_staff = roles.staff
        user.save(update_fields=["is_staff"])
        record_event(
            user,
            actor=None,
            from_state="" if roles.staff else "staff",
            to_state="staff granted" if roles.staff else "staff removed",
            comment=why,
        )


@transaction.atomic
def identity_link(
    *, user: User, issuer: str, subject: str, by: User | AnonymousUser
) -> ExternalIdentity:
    """Link an existing account to a provider's subject: what staff do after a `collision`
    (the audit event names the subject), once they know both are the same person. Only staff
    may; audited on the user. A subject already linked, or a user already linked at this
    issuer, is a PolicyError."""
    if not (by.is_staff or by.is_superuser):
        raise Forbidden("Only staff can link accounts.")
    issuer, subject = issuer.strip().rstrip("/"), subject.strip()
    if ExternalIdentity.objects.filter(issuer=issuer, subject=subject).exists():
        raise PolicyError("This subject is already linked to an account.", field="subject")
    if ExternalIdentity.objects.filter(issuer=issuer, user=user).exists():
        raise PolicyError("This account is already linked at this issuer.", field="user")
    identity = ExternalIdentity.objects.create(user=user, issuer=issuer, subject=subject)
    record_event(
        user,
        actor=by,
        from_state="",
        to_state="identity linked",
        comment=f"subject {subject} at {issuer}",
    )
    return identity


@transaction.atomic
def identity_unlink(*, identity: ExternalIdentity, by: User | AnonymousUser) -> None:
    """Remove a link (staff only; audited): that subject's next sign-in is a first one again."""
    if not (by.is_staff or by.is_superuser):
        raise Forbidden("Only staff can unlink accounts.")
    record_event(
        identity.user,
        actor=by,
        from_state="identity linked",
        to_state="identity unlinked",
        comment=f"subject {identity.subject} at {identity.issuer}",
    )
    identity.delete()
