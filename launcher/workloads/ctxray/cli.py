"""Command line: ``python -m launcher.workloads.ctxray {synth,train} ...``.

Exit status: 0 done; 2 bad arguments or unusable data (one line on stderr, no traceback);
75 stopped by SIGTERM/SIGUSR1 after checkpointing (run again with --resume).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

from .config import EXIT_USAGE, MODEL_NAMES, TrainConfig, UsageError


class _Parser(argparse.ArgumentParser):
    """argparse that reports errors as one 'ctxray: error: ...' line with exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"ctxray: error: {message}\n")


def _window(text: str) -> tuple[float, float]:
    try:
        level, width = (float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError("expected LEVEL,WIDTH in HU, e.g. -500,1500") from None
    return level, width


def _add_synth(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("synth", help="write a deterministic synthetic dataset")
    p.add_argument("--out", required=True)
    p.add_argument("--modality", choices=("xray", "ct"), required=True)
    p.add_argument("--n", type=int, default=60, help="images (slices, radiographs or volumes)")
    p.add_argument("--size", type=int, default=128)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--volumes", action="store_true", help="CT volumes (size^3) instead of slices")
    p.add_argument(
        "--per-patient", type=int, default=3, help="images per patient (slices/radiographs)"
    )


def _add_train(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("train", help="train a classifier and write metrics.json")
    d = TrainConfig(data="", out="")
    p.add_argument("--data", required=True)
    p.add_argument(
        "--data-root",
        default="",
        help="refuse to start unless --data, resolved, lies inside this folder",
    )
    p.add_argument("--out", required=True)
    p.add_argument("--model", default=d.model, help=f"one of {', '.join(MODEL_NAMES)}")
    for name, kind in (
        ("epochs", int),
        ("batch-size", int),
        ("lr", float),
        ("lr-step", int),
        ("lr-gamma", float),
        ("weight-decay", float),
        ("patience", int),
        ("size", int),
        ("dims", int),
        ("slices", int),
        ("folds", int),
        ("fold", int),
        ("val-fraction", float),
        ("seed", int),
        ("workers", int),
        ("threads", int),
        ("bootstrap", int),
        ("progress-every", int),
    ):
        p.add_argument(f"--{name}", type=kind, default=getattr(d, name.replace("-", "_")))
    p.add_argument(
        "--window", type=_window, default=d.window, help="CT LEVEL,WIDTH in HU (default -500,1500)"
    )
    p.add_argument("--pretrained", help="local state dict to start from")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default=d.device)
    for flag in ("lung-crop", "augment"):
        p.add_argument(f"--{flag}", action=argparse.BooleanOptionalAction, default=True)
    for flag in ("amp", "channels-last", "compile"):
        p.add_argument(
            f"--{flag}",
            action=argparse.BooleanOptionalAction,
            default=None,
            help="default: on for CUDA, off for CPU",
        )
    p.add_argument("--deterministic", action="store_true")
    p.add_argument(
        "--resume", action="store_true", help="continue from OUT/checkpoint.pt if there is one"
    )


def build_parser() -> argparse.ArgumentParser:
    """The parser for both commands (exposed for the docs and the tests)."""
    parser = _Parser(
        prog="python -m launcher.workloads.ctxray",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _add_synth(sub)
    _add_train(sub)
    return parser


def _run_synth(args: argparse.Namespace) -> int:
    from .synth import synthesize

    if args.n < 1 or args.size < 16 or args.per_patient < 1:
        raise UsageError("--n and --per-patient must be at least 1, --size at least 16")
    try:
        summary = synthesize(
            args.out, args.modality, args.n, args.size, args.seed, args.volumes, args.per_patient
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    print(json.dumps(summary))
    return 0


def _run_train(args: argparse.Namespace) -> int:
    from .trainer import train  # torch and MONAI load only when training

    fields = {k: v for k, v in vars(args).items() if k != "command"}
    result = train(TrainConfig(**fields))
    if os.environ.get("RANK", "0") != "0":
        return result.exit_code  # under torchrun only rank 0 reports
    if result.status == "preempted":
        print(
            f"stopped by signal after a checkpoint in {result.out}; run again with --resume",
            file=sys.stderr,
        )
    else:
        patient = result.metrics["patient"] if result.metrics else {}
        summary = {k: patient[k]["value"] for k in ("accuracy", "roc_auc") if k in patient}
        print(
            json.dumps(
                {
                    "status": result.status,
                    "epochs": result.epochs_run,
                    "best_epoch": result.best_epoch,
                    "patient": summary,
                    "out": result.out,
                }
            )
        )
    return result.exit_code


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the process exit status."""
    args = build_parser().parse_args(argv)
    try:
        return _run_synth(args) if args.command == "synth" else _run_train(args)
    except UsageError as exc:
        print(f"ctxray: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
