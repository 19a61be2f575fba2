"""The sweep grid: expansion, the CLAIRE preset, validation, train arguments, the leaderboard."""

import pytest

from launcher import bundles
from launcher import sweepgrid as sg
from launcher.stats import bounded_interval


def test_claire_preset_expands_to_540_distinct_cells_in_a_fixed_order():
    cells = sg.expand(sg.validate({"preset": "claire"}))
    assert len(cells) == 540
    assert [c["index"] for c in cells] == list(range(540))
    assert len({(sg.combo_key(c), c["fold"]) for c in cells}) == 540
    assert cells[0] == {
        "index": 0,
        "model": "densenet121",
        "lr": 1e-3,
        "lr_step": 10,
        "weight_decay": 5e-4,
        "fold": 0,
        "folds": 5,
        "epochs": 50,
        "patience": 10,
        "size": 224,
        "window": "-500,1500",
    }
    assert [c["fold"] for c in cells[:6]] == [0, 1, 2, 3, 4, 0]
    assert {c["model"] for c in cells} == {
        "densenet121",
        "densenet161",
        "densenet169",
        "densenet201",
    }
    assert cells == sg.expand(sg.validate({"preset": "claire"}))


def test_a_preset_can_be_narrowed():
    grid = sg.validate({"preset": "claire", "models": ["resnet18"], "folds": 2})
    assert grid.size == 1 * 3 * 3 * 3 * 2


@pytest.mark.parametrize(
    "spec, message",
    [
        (
            {"models": ["vgg16"], "lrs": [1e-3], "lr_steps": [10], "weight_decays": [0.0]},
            "models: unknown vgg16",
        ),
        (
            {"models": [], "lrs": [1e-3], "lr_steps": [10], "weight_decays": [0.0]},
            "models: give a non-empty list",
        ),
        (
            {"models": ["resnet18"], "lrs": [-1], "lr_steps": [10], "weight_decays": [0.0]},
            "lrs: -1 must be a positive",
        ),
        (
            {"models": ["resnet18"], "lrs": [1e-3, 1e-3], "lr_steps": [10], "weight_decays": [0.0]},
            "lrs: values repeat",
        ),
        (
            {
                "models": ["resnet18"],
                "lrs": [1e-3],
                "lr_steps": [10],
                "weight_decays": [0.0],
                "folds": 0,
            },
            "folds:",
        ),
        (
            {"models": ["resnet18"], "lrs": [1e-3], "lr_steps": [10], "weight_decays": [2]},
            "weight_decays:",
        ),
        (
            {
                "models": ["resnet18"],
                "lrs": [1e-3],
                "lr_steps": [10],
                "weight_decays": [0.0],
                "colour": 1,
            },
            "unknown field",
        ),
        (
            {
                "models": ["resnet18"],
                "lrs": [1e-3],
                "lr_steps": [10],
                "weight_decays": [0.0],
                "fixed": {"out": "/"},
            },
            "fixed: 'out' cannot be set",
        ),
        ({"preset": "imagenet"}, "preset: unknown"),
    ],
)
def test_bad_specs_are_refused_with_a_message_naming_the_field(spec, message):
    with pytest.raises(sg.GridError, match=message):
        sg.validate(spec)


def test_huge_grids_are_refused():
    spec = {
        "models": list(sg.MODELS),
        "lrs": [10.0**-k for k in range(1, 11)],
        "lr_steps": list(range(1, 11)),
        "weight_decays": [0.0, 1e-4],
        "folds": 5,
    }
    with pytest.raises(sg.GridError, match="more than the limit"):
        sg.validate(spec)


def test_model_list_matches_what_the_workload_builds():
    from launcher.workloads.ctxray.config import MODEL_NAMES

    assert sg.MODELS == MODEL_NAMES


def test_cell_maps_to_train_arguments_that_the_workload_parser_accepts():
    from launcher.workloads.ctxray.cli import build_parser

    cell = sg.expand(sg.validate({"preset": "claire"}))[7]
    argv = bundles.cell_argv(cell, "/data/bimcv", "/runs/7")
    args = build_parser().parse_args(argv)
    assert (args.model, args.lr, args.lr_step, args.weight_decay) == ("densenet121", 1e-3, 10, 1e-4)
    assert (args.fold, args.folds, args.epochs, args.window) == (2, 5, 50, (-500.0, 1500.0))
    assert (args.data, args.out) == ("/data/bimcv", "/runs/7")


def _fake_result(acc):
    return {
        "patient": {
            "accuracy": {"value": acc, "ci": [0, 1]},
            "roc_auc": {"value": acc - 0.05, "ci": None},
        },
        "slice": {"accuracy": {"value": 0.5}},
    }


def test_leaderboard_averages_folds_with_a_bounded_interval_and_ranks_best_first():
    cells = sg.expand(
        sg.validate(
            {
                "models": ["resnet18", "densenet121"],
                "lrs": [1e-3],
                "lr_steps": [10],
                "weight_decays": [1e-4],
                "folds": 3,
            }
        )
    )
    accs = {"resnet18": [0.80, 0.84, 0.82], "densenet121": [0.90, 0.86, 0.94]}
    results = [(c, _fake_result(accs[c["model"]][c["fold"]])) for c in cells]
    board = sg.leaderboard(results, sort_by="accuracy")
    assert [r["model"] for r in board] == ["densenet121", "resnet18"]
    top = board[0]["accuracy"]
    assert top["mean"] == pytest.approx(0.90) and top["n"] == 3
    assert top["ci"] == pytest.approx(list(bounded_interval([0.90, 0.86, 0.94])[1]))
    assert 0.70 < top["ci"][0] < 0.86 and 0.94 < top["ci"][1] < 1
    assert board[0]["folds_done"] == 3 and board[0]["rank"] == 1
    assert sg.leaderboard(results, level="slice")[0]["accuracy"]["mean"] == pytest.approx(0.5)


def test_leaderboard_counts_unfinished_cells_and_puts_empty_rows_last():
    cells = sg.expand(
        sg.validate(
            {
                "models": ["resnet18", "resnet50"],
                "lrs": [1e-3],
                "lr_steps": [10],
                "weight_decays": [0.0],
                "folds": 2,
            }
        )
    )
    results = [
        (c, _fake_result(0.7) if c["model"] == "resnet50" and c["fold"] == 0 else None)
        for c in cells
    ]
    board = sg.leaderboard(results)
    assert (
        board[0]["model"] == "resnet50"
        and board[0]["folds_done"] == 1
        and board[0]["accuracy"]["ci"] is None
    )
    assert board[1]["accuracy"] == {"mean": None, "ci": None, "n": 0}
    with pytest.raises(sg.GridError, match="sort_by"):
        sg.leaderboard(results, sort_by="dice")


@pytest.mark.parametrize("decays", [[None], ["0.1"], "0.1", [0.1, True], [1.0]])
def test_weight_decays_that_are_not_numbers_in_range_are_a_grid_error(decays):
    """Found by the API fuzzer: `[null]` was a TypeError (a 500), not a 400."""
    spec = {"models": ["resnet18"], "lrs": [1e-3], "lr_steps": [10], "weight_decays": decays}
    with pytest.raises(sg.GridError, match="weight_decays"):
        sg.validate(spec)
