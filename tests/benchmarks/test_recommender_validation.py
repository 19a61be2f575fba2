"""Refusals of bad input: per-field messages that say what is allowed (the API's 400)."""

from __future__ import annotations

import pytest

from benchmarks.catalogue import WORKLOADS
from benchmarks.recommender import RecommendationInputError, parse_request

GOOD = dict(
    model="densenet121",
    dims=2,
    image_size=224,
    dataset_samples=10_000,
    epochs=5,
    precision="bf16",
    gpus=2,
    batch_size=32,
    data_sensitivity="internal",
    needs=["notebooks"],
)


def _errors(**changes) -> dict[str, list[str]]:
    with pytest.raises(RecommendationInputError) as exc:
        parse_request({**GOOD, **changes}, WORKLOADS)
    return exc.value.errors


def test_a_good_request_parses():
    req = parse_request(GOOD, WORKLOADS)
    assert req.model == "densenet121" and req.gpus == 2 and req.needs == ("notebooks",)
    assert req.strategy == "auto"


def test_image_size_defaults_to_the_workload_reference():
    req = parse_request({**GOOD, "image_size": None, "model": "gpt2-xl", "dims": 1}, WORKLOADS)
    assert req.image_size == 128


def test_unknown_model_lists_the_allowed_ones():
    errors = _errors(model="alexnet")
    assert "alexnet" in errors["model"][0]
    assert "densenet121" in errors["model"][0] and "gpt2-xxxl" in errors["model"][0]


def test_wrong_dims_for_the_model_says_which_exist():
    assert "dims 2, 3" in _errors(dims=1)["dims"][0]
    assert "dims 1" in _errors(model="gpt2", dims=3)["dims"][0]


@pytest.mark.parametrize(
    "field, value",
    [
        ("gpus", 0),
        ("gpus", -4),
        ("gpus", 1.5),
        ("gpus", "many"),
        ("gpus", True),
        ("batch_size", 10**9),
        ("epochs", float("nan")),
        ("dataset_samples", float("inf")),
        ("image_size", 3),
        ("budget", -1),
        ("deadline_hours", 0),
    ],
)
def test_nonsense_numbers_are_refused_with_the_allowed_range(field, value):
    (message,) = _errors(**{field: value})[field]
    assert "between" in message


@pytest.mark.parametrize(
    "field, value, allowed",
    [
        ("precision", "int8", "fp32, tf32, fp16, bf16"),
        ("data_sensitivity", "secret", "public, internal, personal, special"),
        ("strategy", "pipeline", "auto, single, ddp, fsdp, deepspeed"),
        ("needs", ["gpu"], "notebooks, root, public_web_service"),
    ],
)
def test_unknown_choices_list_the_allowed_values(field, value, allowed):
    assert allowed in _errors(**{field: value})[field][0]


def test_all_problems_are_reported_at_once():
    errors = _errors(model="alexnet", gpus=0, precision="int8", dataset_samples=None)
    assert set(errors) == {"model", "gpus", "precision", "dataset_samples"}
    assert errors["dataset_samples"] == ["This field is required."]


def test_single_strategy_on_several_gpus_is_refused():
    assert "one GPU" in _errors(strategy="single", gpus=4)["strategy"][0]
