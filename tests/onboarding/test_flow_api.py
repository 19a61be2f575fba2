"""GET /api/v1/onboarding/flow/: the whole published chart, public, walkable by a script."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from portal.onboarding.models import Flowchart
from tests.onboarding.conftest import all_paths


def test_anyone_can_read_the_whole_chart(chart, api):
    response = api.as_user(None).get("/api/v1/onboarding/flow/")
    assert response.status_code == 200
    flow = response.json()
    assert flow["start"] == "cloud"
    assert [q["key"] for q in flow["questions"]] == [
        "cloud",
        "payer",
        "sensitivity",
        "notebooks",
        "v100",
    ]
    cloud = flow["questions"][0]
    assert [(c["label"], c["next"]) for c in cloud["choices"]] == [
        ("Yes", {"type": "question", "key": "payer"}),
        ("Maybe", {"type": "outcome", "key": "azure-trial"}),
        ("No", {"type": "question", "key": "sensitivity"}),
    ]


def test_a_script_can_walk_every_path_to_a_pre_filled_request(chart, api):
    flow = api.get("/api/v1/onboarding/flow/").json()
    ends = {tuple(path): outcome for path, outcome in all_paths(flow)}
    assert len(ends) == 11
    # The seed's V100 question, routed the sensible way round.
    base = ("cloud-no", "data-public", "notebooks-no")
    assert ends[base + ("v100-yes",)]["node_type"] == "J-V100-32"
    assert ends[base + ("v100-no",)]["node_type"] == "B-A100-80"
    # Special-category data only goes where it is accepted.
    special = ends[("cloud-no", "data-special")]
    assert special["facility"] == "azure"
    assert ends[("cloud-maybe",)]["track"] == "trial_credit"
    assert ends[("cloud-maybe",)]["kind"] == "trial"
    url = urlsplit(ends[base + ("v100-no",)]["request_url"])
    assert url.path == "/requests/new/"
    assert parse_qs(url.query) == {
        "facility": ["baskerville"],
        "node_type": ["B-A100-80"],
        "kind": ["trial"],
    }
    sensitivity = next(q for q in flow["questions"] if q["key"] == "sensitivity")
    assert {c["key"]: c["sets"] for c in sensitivity["choices"]}["data-special"] == {
        "data_sensitivity": "special"
    }


def test_no_published_chart_is_a_404(chart, api):
    Flowchart.objects.update(status=Flowchart.Status.ARCHIVED)
    assert api.get("/api/v1/onboarding/flow/").status_code == 404
