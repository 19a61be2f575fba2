"""Command line: `python -m benchmarks.harness run ...` and `... profile`."""

from __future__ import annotations

import argparse
import json
import os
import sys

from benchmarks.harness.measure import PRECISIONS, RunConfig, run
from benchmarks.harness.networks import CNN_MODELS, GPT_SIZES
from benchmarks.harness.post import PostError, post_result


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.harness",
        description="Measure training throughput and peak memory.",
    )
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="measure one workload and print the result as JSON")
    r.add_argument("--model", required=True, choices=CNN_MODELS + tuple(GPT_SIZES))
    r.add_argument(
        "--dims",
        type=int,
        default=2,
        choices=(1, 2, 3),
        help="1 for GPT models, 2 for slices, 3 for volumes",
    )
    r.add_argument(
        "--image-size",
        type=int,
        default=0,
        help="pixels per side (CNN) or tokens per sample (GPT; 0 = block size)",
    )
    r.add_argument("--batch-size", type=int, required=True, help="per GPU (per rank)")
    r.add_argument("--precision", default="fp32", choices=PRECISIONS)
    r.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    r.add_argument("--repeats", type=int, default=5)
    r.add_argument("--warmup", type=int, default=2)
    r.add_argument("--steps", type=int, default=5, help="training steps per timed repeat")
    r.add_argument("--threads", type=int, default=0, help="CPU threads (0: torch's default)")
    r.add_argument("--node-type", default="", help="the portal's node type name, e.g. B-A100-40")
    r.add_argument("--notes", default="")
    r.add_argument("--post", metavar="URL", help="portal base URL to POST the result to")
    r.add_argument(
        "--token",
        default=os.environ.get("PORTAL_TOKEN", ""),
        help="API token (default: $PORTAL_TOKEN)",
    )
    sub.add_parser("profile", help="print parameters, FLOPs and activations of every workload")
    return p


def _run(args: argparse.Namespace) -> int:
    if args.model not in GPT_SIZES and args.image_size <= 0:
        raise SystemExit("--image-size is required for CNN models")
    if args.post and not (args.token and args.node_type):
        raise SystemExit("--post needs --token (or $PORTAL_TOKEN) and --node-type")
    cfg = RunConfig(
        model=args.model,
        dims=args.dims,
        image_size=args.image_size,
        batch_size=args.batch_size,
        precision=args.precision,
        device=args.device,
        repeats=args.repeats,
        warmup=args.warmup,
        steps=args.steps,
        node_type=args.node_type,
        notes=args.notes,
        threads=args.threads,
    )
    result = run(cfg)
    if os.environ.get("RANK", "0") != "0":
        return 0  # under torchrun only rank 0 reports
    print(json.dumps(result, indent=2))
    if args.post:
        try:
            stored = post_result(args.post, args.token, result)
        except PostError as exc:
            print(f"POST failed: {exc}", file=sys.stderr)
            return 2
        print(f"posted: id {stored.get('id', '?')}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the process exit status."""
    args = _parser().parse_args(argv)
    if args.command == "profile":
        from benchmarks.harness.profile import reference_profiles

        print(json.dumps([p.as_dict() for p in reference_profiles()], indent=2))
        return 0
    return _run(args)


if __name__ == "__main__":
    sys.exit(main())
