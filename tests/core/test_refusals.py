"""The ground floor's two mappers and the admin actions' loop map the domain's vocabulary
(core.errors) and nothing else: a refusal is a status and a message, anything else propagates."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from django.contrib import messages
from django.core.exceptions import ValidationError
from rest_framework.exceptions import NotFound as DrfNotFound

from core.admin import run_action
from core.api import exception_handler
from core.errors import Conflict, Forbidden, Invalid, NotFound, clean_or_invalid, invalid_from


@dataclass
class Row:
    pk: int


@dataclass
class FakeAdmin:
    said: list[tuple[str, int]] = field(default_factory=list)

    def message_user(self, request: Any, message: str, level: int) -> None:
        self.said.append((message, level))


def test_an_admin_action_warns_per_refusal_and_counts_the_rest() -> None:
    admin = FakeAdmin()

    def approve(row: Row) -> None:
        if row.pk == 2:
            raise Forbidden("Only admins can do that.")

    done = run_action(admin, None, [Row(1), Row(2), Row(3)], approve, verb="Approved")  # type: ignore[arg-type]
    assert done == 2
    assert admin.said == [
        ("#2: Only admins can do that.", messages.WARNING),
        ("Approved 2 item(s).", messages.SUCCESS),
    ]


def test_an_admin_action_lets_what_is_no_refusal_propagate() -> None:
    def broken(row: Row) -> None:
        raise RuntimeError("a bug")

    with pytest.raises(RuntimeError):
        run_action(FakeAdmin(), None, [Row(1)], broken, verb="Approved")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("error", "status", "body"),
    [
        (Invalid("Too many.", field="params.gpus"), 400, {"params": {"gpus": ["Too many."]}}),
        (Forbidden("Not yours."), 403, {"detail": "Not yours."}),
        (NotFound(), 404, {"detail": "Not found."}),
        (Conflict("Not now.", to="active"), 409, {"detail": "Not now.", "to": "active"}),
    ],
)
def test_the_api_answers_each_refusal_with_its_status_and_body(
    error: Exception, status: int, body: dict[str, Any]
) -> None:
    response = exception_handler(error, {})
    assert response is not None
    assert (response.status_code, response.data) == (status, body)


def test_the_api_leaves_drfs_own_errors_to_drf() -> None:
    response = exception_handler(DrfNotFound("Gone."), {})
    assert response is not None
    assert (response.status_code, response.data) == (404, {"detail": "Gone."})


def test_djangos_validation_error_becomes_invalid_with_the_same_messages() -> None:
    per_field = invalid_from(ValidationError({"code": ["Taken."], "__all__": ["Both."]}))
    assert per_field.body() == {"code": ["Taken."], "__all__": ["Both."]}
    plain = invalid_from(ValidationError(["One.", "Two."]))
    assert plain.body() == {"non_field_errors": ["One.", "Two."]}


def test_clean_or_invalid_refuses_in_the_vocabulary() -> None:
    class Broken:
        def full_clean(self, **kwargs: Any) -> None:
            raise ValidationError({"name": ["Required."]})

    with pytest.raises(Invalid) as refused:
        clean_or_invalid(Broken())  # type: ignore[arg-type]
    assert refused.value.field_errors == {"name": ["Required."]}
