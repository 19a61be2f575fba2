"""The standalone harness: measures a tiny model on CPU and posts over real HTTP."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from benchmarks.harness.__main__ import main
from benchmarks.harness.measure import RunConfig, run
from benchmarks.harness.post import PostError, post_result
from benchmarks.harness.profile import profile

API_FIELDS = {
    "node_type",
    "workload",
    "dims",
    "image_size",
    "precision",
    "strategy",
    "gpus",
    "batch_size",
    "throughput",
    "throughput_min",
    "throughput_max",
    "repeats",
    "peak_memory_gb",
    "source",
    "software",
    "measured_at",
    "notes",
}


class _Portal(BaseHTTPRequestHandler):
    """Stands in for POST /api/v1/benchmarks/: 201 with a good token, else 401; 400 if empty."""

    received: ClassVar[list[dict]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        entry = {
            "path": self.path,
            "auth": self.headers.get("Authorization"),
            "type": self.headers.get("Content-Type"),
            "body": json.loads(body),
        }
        self.received.append(entry)
        if entry["auth"] != "Token s3cret":
            return self._answer(401, {"detail": "Invalid token."})
        if not entry["body"].get("node_type"):
            return self._answer(400, {"node_type": ["This field may not be blank."]})
        return self._answer(201, {"id": 7, **entry["body"]})

    def _answer(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:  # keep test output clean
        pass


@pytest.fixture
def portal():
    _Portal.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Portal)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", _Portal.received
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def tiny_result():
    return run(
        RunConfig(
            model="gpt2-tiny",
            dims=1,
            image_size=0,
            batch_size=4,
            repeats=3,
            warmup=1,
            steps=2,
            node_type="local-cpu",
        )
    )


def test_measures_a_tiny_gpt_on_cpu(tiny_result):
    r = tiny_result
    assert set(r) == API_FIELDS
    assert r["workload"] == "gpt2-tiny" and r["image_size"] == 32 and r["source"] == "measured"
    assert r["strategy"] == "single" and r["gpus"] == 1 and r["repeats"] == 3
    assert 0 < r["throughput_min"] <= r["throughput"] <= r["throughput_max"]
    assert r["peak_memory_gb"] > 0
    assert {"python", "torch", "monai"} <= set(r["software"])
    assert dt.datetime.fromisoformat(r["measured_at"]).tzinfo is not None


def test_measures_a_monai_cnn_on_cpu():
    r = run(
        RunConfig(
            model="resnet18", dims=2, image_size=16, batch_size=2, repeats=1, warmup=1, steps=1
        )
    )
    assert r["workload"] == "resnet18" and r["throughput"] > 0


def test_bad_configurations_are_refused():
    with pytest.raises(ValueError, match="precision"):
        RunConfig(model="resnet18", dims=2, image_size=16, batch_size=2, precision="int8")
    with pytest.raises(ValueError, match="dims must be 1"):
        RunConfig(model="gpt2", dims=2, image_size=16, batch_size=2)


def test_posts_the_result_with_the_token(portal, tiny_result):
    url, received = portal
    stored = post_result(url, "s3cret", tiny_result)
    assert stored["id"] == 7
    (req,) = received
    assert req["path"] == "/api/v1/benchmarks/" and req["auth"] == "Token s3cret"
    assert req["type"] == "application/json" and req["body"] == tiny_result


def test_refusals_carry_the_status_and_the_portals_messages(portal, tiny_result):
    url, _ = portal
    with pytest.raises(PostError) as exc:
        post_result(url, "wrong", tiny_result)
    assert exc.value.status == 401
    with pytest.raises(PostError) as exc:
        post_result(url, "s3cret", {**tiny_result, "node_type": ""})
    assert exc.value.status == 400 and "may not be blank" in exc.value.body


def test_an_unreachable_portal_is_a_post_error_without_status():
    with pytest.raises(PostError) as exc:
        post_result("http://127.0.0.1:9", "t", {}, timeout=5)
    assert exc.value.status is None


def test_command_line_runs_prints_json_and_posts(portal, capsys):
    url, received = portal
    code = main(
        [
            "run",
            "--model",
            "gpt2-tiny",
            "--dims",
            "1",
            "--batch-size",
            "2",
            "--repeats",
            "2",
            "--warmup",
            "1",
            "--steps",
            "1",
            "--node-type",
            "local-cpu",
            "--post",
            url,
            "--token",
            "s3cret",
        ]
    )
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    assert received[0]["body"] == printed and printed["node_type"] == "local-cpu"


def test_profile_counts_parameters_flops_and_activations():
    p = profile("gpt2-tiny", 1, 32)
    assert p.parameters == 2 * (12 * 64 * 64 + 13 * 64) + 2 * 64 + 65 * 64 + 32 * 64
    # Forward matmuls alone are 2 x weights x tokens; attention and the head add more.
    assert p.forward_flops > 2 * 2 * 12 * 64 * 64 * 32
    assert p.activation_bytes > 0


def test_torchrun_trains_with_ddp_and_only_rank_0_reports():
    # Two CPU ranks on gloo: the same code path as NCCL on GPUs, minus the device.
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node=2",
            "-m",
            "benchmarks.harness",
            "run",
            "--model",
            "gpt2-tiny",
            "--dims",
            "1",
            "--batch-size",
            "2",
            "--repeats",
            "1",
            "--warmup",
            "1",
            "--steps",
            "1",
            "--threads",
            "1",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    result = json.loads(out.stdout[out.stdout.index("{") :])  # one JSON document: rank 0's
    assert result["strategy"] == "ddp" and result["gpus"] == 2
    assert result["throughput"] > 0
