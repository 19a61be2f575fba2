"""The sweep page's "Cancel sweep" (issue 39: a running sweep could be cancelled only through
the API or cell by cell): the same `sweep_cancel` service as POST /api/v1/sweeps/{id}/cancel/,
for members and staff; a reviewer is refused and an outsider gets a 404, and neither changes
anything; a finished sweep offers no button and a replayed POST is refused with a message. The
page counts in the facility's unit: CPU-hours on a facility without GPUs."""

from __future__ import annotations

from decimal import Decimal

import pytest

from launcher.models import Job, Sweep
from tests.factories import AllocationFactory, FacilityFactory, NodeTypeFactory

pytestmark = pytest.mark.django_db
S = Job.State


@pytest.fixture
def sweep(project, researcher):
    facility = FacilityFactory(slug="workstation", name="Workstation", backend="local")
    NodeTypeFactory(
        facility=facility, name="local-cpu", device="cpu", cpu_cores=2, accelerators_per_node=1
    )
    allocation = AllocationFactory(project=project, facility=facility, gpu_hours=Decimal(50))
    sweep = Sweep.objects.create(
        allocation=allocation,
        created_by=researcher,
        grid={
            "models": ["resnet18"],
            "lrs": [0.1, 0.01, 0.001],
            "lr_steps": [5],
            "weight_decays": [0.0001],
            "folds": 1,
        },
        params={"dataset": "synthetic-ct"},
        size=3,
        concurrency=1,
        token="portal-sweep-cancel-page",
        estimate_gpu_hours=Decimal("1.500"),
    )
    for index, state in enumerate([S.SUCCEEDED, S.RUNNING, S.QUEUED]):
        Job.objects.create(
            allocation=allocation,
            sweep=sweep,
            created_by=researcher,
            token=sweep.token,
            array_index=index,
            state=state,
            state_reason="waiting for a free slot (1 of 1 in use)" if state == S.QUEUED else "",
            params={
                "model": "resnet18",
                "lr": 10**-index,
                "lr_step": 5,
                "weight_decay": 0.0001,
                "fold": 0,
                "folds": 1,
            },
        )
    return sweep


def states(sweep: Sweep) -> list[str]:
    return list(sweep.jobs.order_by("array_index").values_list("state", flat=True))


def test_a_member_cancels_a_running_sweep_from_its_page(client, researcher, sweep):
    client.force_login(researcher)
    page = client.get(f"/sweeps/{sweep.pk}/").content.decode()
    assert f'action="/sweeps/{sweep.pk}/cancel/"' in page and "Cancel sweep" in page
    # Its figures in the facility's unit, the estimate by the one rounding rule.
    assert "1.50</span> CPU-hours (3 cells x 1 CPU x" in page and "GPU" not in page

    response = client.post(f"/sweeps/{sweep.pk}/cancel/", follow=True)

    assert response.redirect_chain == [(f"/sweeps/{sweep.pk}/", 302)]
    assert states(sweep) == [S.SUCCEEDED, S.CANCELLED, S.CANCELLED]
    # A cancelled cell says why, not what it was waiting for before.
    reasons = list(sweep.jobs.order_by("array_index").values_list("state_reason", flat=True))
    assert reasons[1:] == ["the sweep was cancelled"] * 2
    page = response.content.decode()
    assert f"Sweep #{sweep.pk} cancelled: 2 cells." in page
    assert "Cancel sweep" not in page and "Cancelled" in page

    again = client.post(f"/sweeps/{sweep.pk}/cancel/", follow=True)
    assert again.redirect_chain == [(f"/sweeps/{sweep.pk}/", 302)]
    assert [m.level_tag for m in again.context["messages"]] == ["error"]
    assert states(sweep) == [S.SUCCEEDED, S.CANCELLED, S.CANCELLED]


def test_a_reviewer_is_refused_and_an_outsider_gets_a_404(client, reviewer, outsider, sweep):
    client.force_login(reviewer)
    page = client.get(f"/sweeps/{sweep.pk}/")  # reviewers read sweeps; they do not act on them
    assert page.status_code == 200 and "Cancel sweep" not in page.content.decode()
    refused = client.post(f"/sweeps/{sweep.pk}/cancel/", follow=True)
    assert [m.level_tag for m in refused.context["messages"]] == ["error"]
    assert states(sweep) == [S.SUCCEEDED, S.RUNNING, S.QUEUED]

    client.force_login(outsider)
    assert client.post(f"/sweeps/{sweep.pk}/cancel/").status_code == 404
    assert client.get(f"/sweeps/{sweep.pk}/cancel/").status_code in (404, 405)
    assert states(sweep) == [S.SUCCEEDED, S.RUNNING, S.QUEUED]
