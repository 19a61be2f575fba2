"""From verified claims to a portal account and its roles (portal/identity/claims.py and
services.py), without a browser: the username goes through the membership rule's own check,
a collision is refused and audited, roles follow the groups at every sign-in."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import PermissionDenied

from allocations.models import Event
from allocations.services import PolicyError, project_member_add
from allocations.usernames import CLUSTER_USERNAME_RE
from portal.identity.claims import (
    Roles,
    SignInRefused,
    groups_from,
    roles_from,
    username_from,
    verified_email,
)
from portal.identity.models import ExternalIdentity
from portal.identity.services import identity_link, identity_sign_in, identity_unlink
from tests.factories import UserFactory

ISSUER = "https://idp.uni.example"
User = get_user_model()


def claims(sub="s-101", username="alice", email="alice@uni.example", verified=True, groups=()):
    return {
        "sub": sub,
        "preferred_username": username,
        "email": email,
        "email_verified": verified,
        "given_name": "Alice",
        "family_name": "Ng",
        "groups": list(groups),
    }


@pytest.fixture
def mapping(settings):
    settings.OIDC_USERNAME_CLAIM = "preferred_username"
    settings.OIDC_GROUPS_CLAIM = "groups"
    settings.OIDC_REVIEWER_GROUPS = ["portal-reviewers"]
    settings.OIDC_STAFF_GROUPS = ["portal-staff"]
    return settings


def events(user) -> list[str]:
    return list(
        Event.objects.filter(
            content_type=ContentType.objects.get_for_model(User), object_id=user.pk
        ).values_list("to_state", flat=True)
    )


@pytest.mark.parametrize(
    "value, expected",
    [
        ("alice", "alice"),
        ("a_l-1", "a_l-1"),
        ("alice@uni.example", "alice"),
        ("0x", "0x"),
        ("alice.smith", "alice.smith"),
        ("1alice", "1alice"),
    ],
)
def test_a_login_name_or_the_local_part_of_an_address_is_the_username(value, expected):
    assert username_from({"uid": value}, "uid") == expected


@pytest.mark.parametrize(
    "value", ["Alice", "_svc", "-x", "", "a" * 33, "Alice.Smith@uni.example", "al ice"]
)
def test_a_name_the_membership_rule_refuses_is_refused_not_rewritten(value):
    assert not CLUSTER_USERNAME_RE.match(value.split("@")[0])  # the same rule says no
    with pytest.raises(SignInRefused) as refused:
        username_from({"uid": value}, "uid")
    assert refused.value.reason == "username"


@pytest.mark.parametrize("verified", [False, None, "false", "yes"])
def test_an_email_the_provider_has_not_verified_is_refused(verified):
    with pytest.raises(SignInRefused) as refused:
        verified_email({"email": "a@uni.example", "email_verified": verified})
    assert refused.value.reason == "unverified"


def test_a_verified_email_may_come_as_a_string():
    assert verified_email({"email": "a@uni.example", "email_verified": "true"}) == "a@uni.example"


def test_groups_come_as_a_list_or_one_string_and_map_to_roles():
    assert groups_from({"g": ["a", " b "]}, "g") == {"a", "b"}
    assert groups_from({"g": "a, b c"}, "g") == {"a", "b", "c"}
    assert groups_from({}, "g") == set()
    mapping = dict(reviewer_groups=["rev", "panel"], staff_groups=["ops"])
    assert roles_from({"panel"}, **mapping) == Roles(reviewer=True, staff=False)
    assert roles_from({"ops", "x"}, **mapping) == Roles(reviewer=False, staff=True)
    # No mapping configured: the role is left alone (None), not taken away.
    assert roles_from({"rev"}, reviewer_groups=[], staff_groups=[]) == Roles(None, None)


def test_first_sign_in_creates_and_links_the_account(db, mapping, project, pi):
    user = identity_sign_in(issuer=ISSUER, claims=claims())

    assert (user.username, user.email, user.first_name) == ("alice", "alice@uni.example", "Alice")
    assert not user.has_usable_password()
    assert ExternalIdentity.objects.get(issuer=ISSUER, subject="s-101").user == user
    assert events(user) == ["created"]
    assert project_member_add(project=project, by=pi, user=user).cluster_username == "alice"


def test_the_next_sign_in_finds_the_same_account_by_subject_not_by_name(db, mapping):
    first = identity_sign_in(issuer=ISSUER, claims=claims())
    again = identity_sign_in(
        issuer=ISSUER, claims=claims(username="alice2", email="alice.ng@uni.example")
    )
    assert again == first
    again.refresh_from_db()
    assert (again.username, again.email) == ("alice", "alice.ng@uni.example")


@pytest.mark.parametrize(
    "local, what",
    [
        (dict(username="alice", email="someone@else.example"), "username"),
        (dict(username="ALICE", email="someone@else.example"), "username"),
        (dict(username="a-local", email="Alice@uni.example"), "email"),
    ],
)
def test_an_unlinked_account_with_the_username_or_email_is_never_merged(db, mapping, local, what):
    existing = UserFactory(**local)

    with pytest.raises(SignInRefused) as refused:
        identity_sign_in(issuer=ISSUER, claims=claims())

    assert (refused.value.reason, refused.value.context["what"]) == ("collision", what)
    assert events(existing) == ["sign-in refused"]
    assert "s-101" in Event.objects.get().comment
    assert not ExternalIdentity.objects.exists()
    assert User.objects.count() == 1


def test_the_same_name_from_another_provider_is_a_collision_too(db, mapping):
    identity_sign_in(issuer=ISSUER, claims=claims())
    with pytest.raises(SignInRefused) as refused:
        identity_sign_in(
            issuer="https://other.example", claims=claims(sub="s-101", email="x@other.example")
        )
    assert refused.value.reason == "collision"


def test_roles_are_read_again_at_every_sign_in_and_each_change_is_audited(db, mapping):
    user = identity_sign_in(
        issuer=ISSUER, claims=claims(groups=["portal-reviewers", "portal-staff"])
    )
    assert user.is_staff and user.groups.filter(name="reviewers").exists()

    identity_sign_in(issuer=ISSUER, claims=claims(groups=["portal-reviewers"]))
    user.refresh_from_db()
    assert not user.is_staff and user.groups.filter(name="reviewers").exists()

    identity_sign_in(issuer=ISSUER, claims=claims(groups=[]))
    assert not user.groups.filter(name="reviewers").exists()
    assert events(user) == [
        "created",
        "reviewer granted",
        "staff granted",
        "staff removed",
        "reviewer removed",
    ]


def test_without_a_mapping_the_roles_set_in_the_admin_stay(db, mapping):
    mapping.OIDC_STAFF_GROUPS = []
    user = identity_sign_in(issuer=ISSUER, claims=claims())
    User.objects.filter(pk=user.pk).update(is_staff=True)
    identity_sign_in(issuer=ISSUER, claims=claims())
    user.refresh_from_db()
    assert user.is_staff


def test_a_disabled_account_cannot_sign_in(db, mapping):
    user = identity_sign_in(issuer=ISSUER, claims=claims())
    User.objects.filter(pk=user.pk).update(is_active=False)
    with pytest.raises(SignInRefused) as refused:
        identity_sign_in(issuer=ISSUER, claims=claims())
    assert refused.value.reason == "inactive"


def test_an_unverified_email_creates_nothing(db, mapping):
    with pytest.raises(SignInRefused):
        identity_sign_in(issuer=ISSUER, claims=claims(verified=False))
    assert not User.objects.exists() and not Event.objects.exists()


def test_staff_link_an_account_after_a_collision_and_the_next_sign_in_finds_it(
    db, mapping, admin, client
):
    existing = UserFactory(username="alice", email="alice@old.example")
    with pytest.raises(SignInRefused):
        identity_sign_in(issuer=ISSUER, claims=claims())

    client.force_login(admin)
    answer = client.post(
        "/admin/identity/externalidentity/add/",
        {"user": existing.pk, "issuer": ISSUER, "subject": "s-101"},
    )
    assert answer.status_code == 302
    assert identity_sign_in(issuer=ISSUER, claims=claims()) == existing
    assert events(existing) == ["sign-in refused", "identity linked"]


def test_only_staff_link_or_unlink(db, researcher, outsider):
    with pytest.raises(PermissionDenied):
        identity_link(user=outsider, issuer=ISSUER, subject="s-1", by=researcher)
    identity = ExternalIdentity.objects.create(user=outsider, issuer=ISSUER, subject="s-1")
    with pytest.raises(PermissionDenied):
        identity_unlink(identity=identity, by=researcher)
    assert ExternalIdentity.objects.filter(pk=identity.pk).exists()


def test_a_subject_links_to_one_account_only(db, admin, researcher, outsider):
    identity_link(user=researcher, issuer=ISSUER, subject="s-1", by=admin)
    with pytest.raises(PolicyError):
        identity_link(user=outsider, issuer=ISSUER, subject="s-1", by=admin)
    with pytest.raises(PolicyError):
        identity_link(user=researcher, issuer=ISSUER, subject="s-2", by=admin)
