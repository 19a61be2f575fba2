"""`make run` serves as production does (docs/operations.md, "Static files and error pages"):
DEBUG off, so a wrong URL shows the portal's 404 page and an error its standalone 500 page, never
Django's technical pages (every URL pattern, 432 px wide on a phone; settings and tracebacks);
static files are collected and served by WhiteNoise under hashed names, gzipped and cached for a
year; and the pages' plotly.js is the basic partial bundle (scatter, bar, pie), 1.2 MB where the
full one is 4.8 MB, holding every trace type the portal's charts draw."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace

import plotly.graph_objects as go
import pytest
from django.conf import settings as django_settings
from django.core.management import call_command
from django.db import connections
from django.http import HttpRequest, HttpResponse
from django.template import loader
from django.templatetags.static import static
from django.test import Client, override_settings
from django.test.testcases import LiveServerThread
from django.urls import include, path
from django.utils import timezone
from plotly.basedatatypes import BaseTraceType

from allocations.models import Allocation
from tests.browser import login
from tests.factories import FacilityFactory, charge

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = "vendor/plotly/plotly.min.js"
# The bundle served (1,191,749 bytes, 395 KB gzipped) against the full plotly.js (4,815,814).
BUNDLE_MAX_BYTES = 1_250_000
BUNDLE_MAX_GZIP_BYTES = 420_000
# What the first view of a chart page may transfer, the "done means".
PAGE_MAX_BYTES = 1_500_000
# Every plotly.js trace type (the figure classes of the pinned plotly package: "scatter",
# "bar", "heatmap", "sankey", ...), to tell a trace type from an axis type ("date", "log").
ALL_TRACE_TYPES = {
    name.lower()
    for name in dir(go)
    if isinstance(getattr(go, name), type) and issubclass(getattr(go, name), BaseTraceType)
}
# Where the portal builds or draws figures: the apps' Python, the pages' scripts, templates.
SOURCES = ("allocations", "benchmarks", "core", "launcher", "portal", "static/js", "templates")


def boom(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("planted for the 500 page")


# This module is also the URLconf of the error tests: the portal's routes plus one that fails.
urlpatterns = [path("boom/", boom), path("", include("portal.urls"))]
handler404 = "portal.errors.page_not_found"
handler500 = "portal.errors.server_error"


def bundle_traces(text: str) -> set[str]:
    """The trace types a plotly.js bundle registers (each a module of type "trace")."""
    return set(re.findall(r'moduleType:"trace",name:"(\w+)"', text))


def traces_the_portal_draws() -> dict[str, set[str]]:
    """{trace type: files}, for every trace type named where figures are built or drawn: a
    `"type": "bar"` in a figure dict or a page's script, a `go.Bar(...)`, a `fig.add_bar(...)`.
    Only files that build figures (they mention plotly or a figure's "layout") are read."""
    found: dict[str, set[str]] = {}
    patterns = (r"""\btype['"]?\s*[:=]\s*['"](\w+)['"]""", r"\bgo\.(\w+)\(", r"\.add_(\w+)\(")
    for top in SOURCES:
        for file in (ROOT / top).rglob("*"):
            if file.suffix not in {".py", ".js", ".html"} or "migrations" in file.parts:
                continue
            text = file.read_text(encoding="utf-8")
            if not re.search(r"plotly|Plotly|['\"]layout['\"]", text):
                continue
            for pattern in patterns:
                for name in re.findall(pattern, text):
                    if name.lower() in ALL_TRACE_TYPES:
                        found.setdefault(name.lower(), set()).add(str(file.relative_to(ROOT)))
    return found


MANIFEST_STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}


@pytest.fixture(scope="module")
def collected(tmp_path_factory) -> Path:
    """`collectstatic` as `make run` and the image run it (PORTAL_STATIC_MANIFEST=true), into a
    folder of this module's own: once, it takes seconds."""
    root = tmp_path_factory.mktemp("static")
    with override_settings(STATIC_ROOT=root, STORAGES=MANIFEST_STORAGES):
        call_command("collectstatic", "--noinput", verbosity=0)
    return root


@pytest.fixture
def production(settings, collected):
    """Settings as `make run` and the image have them: DEBUG off, the collected files served
    under their hashed names and only from there."""
    settings.DEBUG = False
    settings.STATIC_ROOT = collected
    settings.STORAGES = MANIFEST_STORAGES
    settings.WHITENOISE_USE_FINDERS = False
    return settings


# The make targets ------------------------------------------------------------------------


def make_target(name: str) -> str:
    """A Makefile target's recipe, its variables expanded one level (enough for RUN_ENV)."""
    makefile = (ROOT / "Makefile").read_text()
    variables = dict(re.findall(r"^(\w+) :?= (.*)$", makefile, flags=re.MULTILINE))
    recipe = re.search(rf"^{name}:.*\n((?:\t.*\n|.*\\\n)+)", makefile, flags=re.MULTILINE)
    assert recipe, name
    return re.sub(r"\$\((\w+)\)", lambda m: variables.get(m[1], m[0]), recipe[1])


def test_make_run_serves_with_debug_off_and_collected_static_files():
    recipe = make_target("run")
    assert "DEBUG=true" not in recipe
    exported = False  # every manage.py (migrate, seed_demo, ..., runserver) with DEBUG off
    for line in recipe.splitlines():
        exported = exported or "export DEBUG=false" in line
        if "manage.py" in line:
            assert exported or "DEBUG=false" in line, line
            assert exported or "PORTAL_STATIC_MANIFEST=true" in line, line
    assert recipe.index("collectstatic --noinput") < recipe.index("runserver")
    assert "var/secret-key" in recipe  # a real key, made once, not Django's insecure default


def test_make_install_and_the_image_fetch_the_pinned_bundle():
    assert "bash scripts/install-plotly.sh" in make_target(r"\$\(STAMP\)")
    script = (ROOT / "scripts" / "install-plotly.sh").read_text()
    assert re.search(r"^VERSION=\d+\.\d+\.\d+$", script, flags=re.MULTILINE)  # exact pin
    assert re.search(r"^SHA256=[0-9a-f]{64}$", script, flags=re.MULTILINE)
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert (
        dockerfile.index("install-plotly.sh")
        < dockerfile.index("PORTAL_STATIC_MANIFEST=true")
        < dockerfile.index("collectstatic")
    )


@pytest.mark.parametrize(
    ("flag", "backend", "finders"),
    [
        ("true", "whitenoise.storage.CompressedManifestStaticFilesStorage", False),
        ("", "whitenoise.storage.CompressedStaticFilesStorage", True),
    ],
)
def test_portal_static_manifest_switches_to_the_collected_hashed_files(flag, backend, finders):
    """Read by a fresh interpreter: settings are made once per process."""
    env = {**os.environ, "PORTAL_STATIC_MANIFEST": flag, "DEBUG": "false", "SECRET_KEY": "x"}
    code = (
        "import json, portal.settings as s; "
        "print(json.dumps([s.STORAGES['staticfiles']['BACKEND'], s.WHITENOISE_USE_FINDERS]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[-1]) == [backend, finders]


# The error pages ------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_wrong_url_shows_the_portals_404_page(client, settings):
    settings.DEBUG = False
    response = client.get("/allocations/999999/nothing-here/")

    assert response.status_code == 404
    page = response.content.decode()
    assert "<h1>Not found</h1>" in page and "/allocations/999999/nothing-here/" in page
    assert 'href="/"' in page and 'href="/knowledge/"' in page
    assert "Using the URLconf" not in page and "urlpatterns" not in page.lower()


@pytest.mark.django_db
def test_a_wrong_url_under_debug_is_the_technical_page_this_guards_against(client, settings):
    """The contrast: with DEBUG on (what `make run` served) Django lists every URL pattern."""
    settings.DEBUG = True
    assert "Using the URLconf" in client.get("/allocations/999999/nothing-here/").content.decode()


@pytest.mark.django_db
@pytest.mark.urls(__name__)
def test_an_error_shows_the_portals_500_page_allowed_by_the_policy(settings):
    settings.DEBUG = False
    client = Client(raise_request_exception=False)

    response = client.get("/boom/")

    assert response.status_code == 500
    page = response.content.decode()
    assert "Something went wrong" in page and 'href="/"' in page
    assert "Traceback" not in page and "planted for the 500 page" not in page
    # Its one inline <style> is allowed by its hash (the CSP allows no 'unsafe-inline').
    style = re.search(r"<style>(.*?)</style>", page, flags=re.S)
    assert style
    digest = base64.b64encode(hashlib.sha256(style[1].encode()).digest()).decode()
    assert f"'sha256-{digest}'" in response["Content-Security-Policy"]


def test_the_500_page_needs_no_context_no_database_and_no_other_file():
    """No django_db mark: a query while it renders would fail the test."""
    source = (ROOT / "templates" / "500.html").read_text()
    assert "{%" not in source and "{{" not in source  # nothing that can fail to render
    assert not re.search(r'<(link|script|img)\b|src="', source)  # nothing else to load
    assert "Something went wrong" in loader.get_template("500.html").render()


# The plotly bundle ----------------------------------------------------------------------


def test_the_bundle_is_the_basic_one_and_holds_every_trace_type_the_portal_draws():
    bundle = Path(django_settings.PLOTLY_BUNDLE_DIR) / "plotly.min.js"
    assert bundle.is_file(), f"{bundle} is missing: run `make install` (scripts/install-plotly.sh)"
    text = bundle.read_text(encoding="utf-8")

    assert len(text.encode()) < BUNDLE_MAX_BYTES
    assert text.startswith("/**\n* plotly.js (basic - minified) v")
    registered = bundle_traces(text)
    assert registered == {"scatter", "bar", "pie"}
    drawn = traces_the_portal_draws()
    assert {"scatter", "bar"} <= set(drawn)  # the scan finds what the chart builders write
    missing = {name: files for name, files in drawn.items() if name not in registered}
    assert not missing, (
        f"charts draw trace types the bundle lacks: {missing}; serve a dist that has them "
        "(scripts/install-plotly.sh) and its CSP style hashes"
    )


def test_the_chart_builders_figures_use_only_the_bundles_trace_types():
    """The figures themselves, as the pages embed them, not only the source text."""
    from allocations.charts import burn_down_figure, daily_figure
    from benchmarks.charts import calibration, scaling, throughput_per_precision, time_vs_cost
    from launcher.charts import leaderboard_figure, loss_figure, roc_figure
    from launcher.models import Job

    today = timezone.localdate()
    allocation = Allocation(gpu_hours=Decimal(40), start_date=today, end_date=today)
    series = [{"day": today, "gpu_hours": 2.0, "cost": 0.0}]
    roc = {"roc": {"fpr": [0, 1], "tpr": [0, 1]}, "roc_auc": {"value": 0.5}}
    job = Job(progress={"history": [[1, 0.9], [2, 0.7]]}, metrics={"patient": roc})
    score = {"mean": 0.8, "ci": [0.7, 0.9]}
    row = {"model": "m", "lr": 0.1, "lr_step": 5, "weight_decay": 0.0, "f1": score}
    result = {"predicted_hours": 1.0, "cost": 2.0, "node_type": "A100", "facility": "f"}
    point = SimpleNamespace(
        node_type="A100", workload="w", measured_hours=1.0, predicted_hours=1.2, label="j"
    )
    figures = [
        burn_down_figure(allocation, series, today),
        daily_figure(allocation, series),
        loss_figure(job),
        leaderboard_figure([row], "f1"),
        roc_figure(job),
        time_vs_cost([{**result, "eligible": True, "fits_memory": True, "pareto": True}]),
        throughput_per_precision({"fp16": {"A100": 10.0}}),
        scaling([{"label": "ddp", "gpus": [1, 2], "throughput": [1.0, 1.9]}]),
        calibration([point]),
    ]
    bundle = Path(django_settings.PLOTLY_BUNDLE_DIR) / "plotly.min.js"
    registered = bundle_traces(bundle.read_text(encoding="utf-8"))
    used = {trace.get("type", "scatter") for fig in figures for trace in fig["data"]}
    assert used == {"scatter", "bar"} and used <= registered


# Static files as production serves them --------------------------------------------------


def test_collectstatic_names_the_bundle_by_its_hash_and_gzips_it(production):
    root = Path(production.STATIC_ROOT)
    manifest = json.loads((root / "staticfiles.json").read_text())["paths"]
    hashed = manifest[BUNDLE]
    assert re.fullmatch(r"vendor/plotly/plotly\.min\.[0-9a-f]{12}\.js", hashed)
    assert static(BUNDLE) == f"/static/{hashed}"
    assert (root / f"{hashed}.gz").stat().st_size < BUNDLE_MAX_GZIP_BYTES
    try:
        import brotli  # noqa: F401  (WhiteNoise writes .br beside .gz when it is installed)
    except ImportError:
        pass
    else:
        assert (root / f"{hashed}.br").is_file()


@pytest.mark.django_db
def test_whitenoise_serves_hashed_files_gzipped_and_cached_for_a_year(production):
    client = Client()  # its middleware is made now, under these settings
    hashed_url = static(BUNDLE)

    response = client.get(hashed_url, HTTP_ACCEPT_ENCODING="gzip, deflate")

    assert response.status_code == 200
    assert response["Content-Encoding"] == "gzip"
    assert (
        "immutable" in response["Cache-Control"]
        and "max-age=315360000" in response["Cache-Control"]
    )
    body = b"".join(response.streaming_content)
    assert len(body) < BUNDLE_MAX_GZIP_BYTES
    # The source name still answers (for anything that links it by hand), briefly cached.
    plain = client.get(f"/static/{BUNDLE}")
    assert plain.status_code == 200 and "immutable" not in plain["Cache-Control"]


@pytest.mark.django_db
def test_chart_pages_link_the_hashed_bundle(production, client, researcher, project):
    allocation = _allocation_with_usage(project)
    client.force_login(researcher)

    page = client.get(f"/allocations/{allocation.pk}/").content.decode()

    assert f'src="{static(BUNDLE)}"' in page and f'src="/static/{BUNDLE}"' not in page


def _allocation_with_usage(project) -> Allocation:
    facility = FacilityFactory(
        slug="local-serving", name="Local processes", backend="local", backend_settings={}
    )
    today = timezone.localdate()
    allocation = Allocation.objects.create(
        project=project,
        facility=facility,
        gpu_hours=Decimal(40),
        start_date=today - dt.timedelta(days=3),
        end_date=today + dt.timedelta(days=30),
        status="active",
        account_name="serving-a1",
    )
    moment = timezone.now() - dt.timedelta(days=1)
    charge(
        allocation=allocation,
        source="local",
        external_id="serving-use",
        period_start=moment,
        period_end=moment,
        gpu_seconds=7200,
        cost=Decimal("0"),
    )
    return allocation


# In a browser ---------------------------------------------------------------------------


@pytest.fixture
def production_server(production, transactional_db):
    """A live server whose requests pass through the portal's middleware, WhiteNoise included,
    under the production settings (pytest-django's `live_server` answers /static/ itself, from
    the source folders, uncompressed)."""
    shared = {
        conn.alias: conn
        for conn in connections.all()
        if conn.vendor == "sqlite" and conn.is_in_memory_db()
    }
    for conn in shared.values():
        conn.inc_thread_sharing()
    thread = LiveServerThread("127.0.0.1", lambda handler: handler, connections_override=shared)
    thread.daemon = True
    thread.start()
    thread.is_ready.wait()
    if thread.error:
        raise thread.error
    yield SimpleNamespace(url=f"http://127.0.0.1:{thread.port}")
    thread.terminate()
    for conn in shared.values():
        conn.dec_thread_sharing()


def test_the_allocation_page_first_view_transfers_under_1_5_mb(
    production_server, page, researcher, project
):
    allocation = _allocation_with_usage(project)
    login(page, production_server, researcher.username)
    # An empty cache: the login page's stylesheet and icon are fetched again, and counted.
    page.context.new_cdp_session(page).send("Network.clearBrowserCache")
    responses = []
    page.on("response", lambda response: responses.append(response))

    started = time.monotonic()
    page.goto(f"{production_server.url}/allocations/{allocation.pk}/", wait_until="load")
    loaded = time.monotonic() - started
    page.locator("#chart-burn-down .main-svg").first.wait_for()

    sizes = {r.url: r.request.sizes() for r in responses}
    # A size Chromium could not report (-1: a response it was still reading when the page
    # settled) counts as nothing; the bundle, the bulk of the page, must have come over the wire.
    transferred = sum(
        max(s["responseBodySize"], 0) + max(s["responseHeadersSize"], 0) for s in sizes.values()
    )
    bundle = [s for url, s in sizes.items() if static(BUNDLE) in url]
    assert bundle and bundle[0]["responseBodySize"] > 0, sizes  # fetched, not from a cache
    assert transferred < PAGE_MAX_BYTES, (transferred, sizes)
    print(f"allocation page: {transferred:,} bytes in {len(sizes)} responses, load {loaded:.2f} s")


@pytest.mark.urls(__name__)
def test_a_wrong_url_and_an_error_fit_a_phone(production_server, chromium):
    context = chromium.new_context(viewport={"width": 390, "height": 800})
    page = context.new_page()
    complaints: list[str] = []
    page.on("console", lambda m: complaints.append(m.text) if m.type == "error" else None)
    try:
        for url, status, heading in (
            (
                "/no-such-page/with/a/rather-long-path-that-has-no-place-to-break-at-all/",
                404,
                "Not found",
            ),
            ("/boom/", 500, "Something went wrong"),
        ):
            response = page.goto(f"{production_server.url}{url}")
            assert response.status == status
            assert page.locator("h1").inner_text() == heading
            assert page.evaluate("document.documentElement.scrollWidth") == 390, url
        # A 404 and a 500 each log their status; nothing else (no CSP violation, no script error).
        assert [c for c in complaints if "status of" not in c] == [], complaints
    finally:
        context.close()
