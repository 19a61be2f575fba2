"""From a provider's verified claims to what the portal needs: whether the email is verified,
the username (which is also the member's cluster login, so it must pass the membership rule's
own check, allocations.usernames.CLUSTER_USERNAME_RE), and the roles the groups give.
Pure functions: portal/identity/services.py applies them."""

from __future__ import annotations

from dataclasses import dataclass

from allocations.usernames import CLUSTER_USERNAME_RE


class SignInRefused(Exception):
    """A sign-in the portal will not complete; `reason` picks the page the person sees."""

    def __init__(self, reason: str, detail: str = "", *, account=None, **context: str) -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail
        self.account = account  # the existing account a `collision` ran into
        self.context = context


def verified_email(claims: dict) -> str:
    """The email address, only when the provider says it verified it (`email_verified`)."""
    email = str(claims.get("email") or "").strip()
    verified = claims.get("email_verified")
    if isinstance(verified, str):  # some providers send "true"
        verified = verified.strip().lower() == "true"
    if not email or verified is not True:
        raise SignInRefused(
            "unverified", f"email {email!r}, email_verified={verified!r}", email=email
        )
    return email


def username_from(claims: dict, claim: str) -> str:
    """The portal username and cluster login from the configured claim: the part before `@`
    when the claim is an address (eppn, UPN), then the membership rule's login-name check. No
    other rewriting: a name that fails is refused, not silently changed into someone else's."""
    raw = str(claims.get(claim) or "").strip()
    name = raw.split("@", 1)[0]
    if not CLUSTER_USERNAME_RE.match(name):
        raise SignInRefused("username", f"claim {claim}={raw!r} is not a login name", name=raw)
    return name


@dataclass(frozen=True)
class Roles:
    """None: the mapping for that role is not configured, so the portal leaves it alone."""

    reviewer: bool | None
    staff: bool | None


def groups_from(claims: dict, claim: str) -> set[str]:
    """The groups (or entitlements) claim as a set: a list, or one string of names separated
    by commas or spaces."""
    value = claims.get(claim) or []
    if isinstance(value, str):
        value = value.replace(",", " ").split()
    return {str(item).strip() for item in value if str(item).strip()}


def roles_from(groups: set[str], *, reviewer_groups: list[str], staff_groups: list[str]) -> Roles:
    """Reviewer when in any of `reviewer_groups`, staff when in any of `staff_groups`."""
    return Roles(
        reviewer=bool(groups & set(reviewer_groups)) if reviewer_groups else None,
        staff=bool(groups & set(staff_groups)) if staff_groups else None,
    )
