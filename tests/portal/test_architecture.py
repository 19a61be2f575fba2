"""The architecture rules the tools cannot state, in the code itself: the backend seam (no code
outside the registry compares backend names or probes a backend's capabilities), no
function-level imports hiding cycles (scripts/function_imports.py), and one error vocabulary
(services raise core.errors' refusals, never Django's). The import contracts (.importlinter)
and the types (mypy.ini) are `make check`'s; tests/test_make_check.py shows it catches each."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from launcher.backends.registry import registered
from scripts.function_imports import domain_files, function_imports

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("portal", "allocations", "benchmarks", "launcher")
REGISTRY = ROOT / "launcher" / "backends" / "registry.py"
BACKEND_NAMES = {"local", "slurm", "aws", "manual"}
CAPABILITY_METHODS = {
    "provision",
    "sync_account",
    "submit",
    "resume",
    "observe",
    "fetch",
    "cancel",
    "price_launch",
    "usage",
}


def test_at_most_five_function_level_imports_in_domain_code():
    """Imports inside functions hid four import cycles; hoisted, the cycles are gone, and
    no more than five such imports remain (AppConfig.ready, the node-side workloads and the
    benchmark harness excepted)."""
    found = [(path, line) for path in domain_files() for line, _ in function_imports(path)]
    assert len(domain_files()) > 100
    assert len(found) <= 5, found


def test_the_import_counter_sees_an_import_inside_a_function(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import os\n\ndef f():\n    import sys\n    return sys\n\n"
        "class C:\n    def g(self):\n        from os import path\n"
    )
    assert [line for line, _ in function_imports(probe)] == [4, 9]


def _names_a_backend(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant) and node.value in BACKEND_NAMES:
        return True
    if isinstance(node, ast.Attribute):
        if node.attr == "backend":  # facility.backend == ..., allocation.facility.backend in ...
            return True
        return (
            node.attr.lower() in BACKEND_NAMES
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "Backend"
        )
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_names_a_backend(e) for e in node.elts)
    return False


def _is_kind_or_source(node: ast.Compare) -> bool:
    # Facility.Kind.LOCAL and UsageRecord.Source.LOCAL share the word but are not backends.
    parts = [node.left, *node.comparators]
    return any(
        isinstance(p, ast.Attribute) and p.attr in ("kind", "source", "device") for p in parts
    )


def violations(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if (
            isinstance(node, ast.Compare)
            and not _is_kind_or_source(node)
            and any(_names_a_backend(p) for p in [node.left, *node.comparators])
        ):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} compares backend names")
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("hasattr", "getattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value in CAPABILITY_METHODS
        ):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} probes {node.args[1].value!r}")
    return found


def test_no_code_outside_the_registry_compares_backend_names_or_probes_capabilities():
    files = [
        p
        for package in PACKAGES
        for p in (ROOT / package).rglob("*.py")
        if "migrations" not in p.parts and p != REGISTRY
    ]
    assert len(files) > 100
    assert [v for f in files for v in violations(f)] == []


def test_the_guard_catches_what_it_forbids(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "if facility.backend != 'slurm':\n    pass\n"
        "ok = hasattr(runner, 'resume')\n"
        "x = f.backend in (Facility.Backend.AWS,)\n"
    )
    bad = bad.rename(ROOT / "tests" / "portal" / f"_guard_probe_{tmp_path.name}.py")
    try:
        assert len(violations(bad)) == 3
    finally:
        bad.unlink()


# One error vocabulary: a service refuses with core.errors (Invalid, Forbidden, NotFound,
# Conflict), which both mappers (core/api.py, core/refusals.py) know; never with Django's own
# PermissionDenied or ValidationError, which they no longer map.
DJANGO_REFUSALS = {"PermissionDenied", "ValidationError"}


def service_files() -> list[Path]:
    """Every service module of the apps: a services.py, or a module of a services/ package."""
    return [
        p
        for package in PACKAGES
        for p in (ROOT / package).rglob("*.py")
        if "migrations" not in p.parts and (p.stem == "services" or "services" in p.parts[:-1])
    ]


def _root_name(node: ast.expr) -> str:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else ""


def django_refusals(path: Path) -> list[str]:
    """Where `path` imports Django's PermissionDenied or ValidationError, or raises one (by its
    name, or through a Django module: `forms.ValidationError`, `exceptions.PermissionDenied`)."""
    tree = ast.parse(path.read_text(), str(path))
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    found: list[str] = []
    names: set[str] = set()  # Django's refusals, as this module names them
    modules: set[str] = set()  # names bound to Django modules (or their other members)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "django":
            for alias in node.names:
                if alias.name in DJANGO_REFUSALS:
                    names.add(alias.asname or alias.name)
                    found.append(f"{where}:{node.lineno} imports Django's {alias.name}")
                else:
                    modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            modules.update(
                (alias.asname or alias.name).split(".")[0]
                for alias in node.names
                if alias.name.split(".")[0] == "django"
            )
    for node in ast.walk(tree):
        if not isinstance(node, ast.Raise) or node.exc is None:
            continue
        exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        if isinstance(exc, ast.Name) and exc.id in names:
            found.append(f"{where}:{node.lineno} raises Django's {exc.id}")
        elif (
            isinstance(exc, ast.Attribute)
            and exc.attr in DJANGO_REFUSALS
            and _root_name(exc) in modules
        ):
            found.append(f"{where}:{node.lineno} raises Django's {exc.attr}")
    return found


def test_services_refuse_only_in_the_domain_vocabulary() -> None:
    files = service_files()
    assert len(files) >= 20, files
    assert [v for f in files for v in django_refusals(f)] == []


def test_the_vocabulary_guard_catches_what_it_forbids(tmp_path: Path) -> None:
    bad = tmp_path / "services.py"
    bad.write_text(
        "from django.core.exceptions import PermissionDenied\n"
        "from django import forms\n"
        "from core.errors import Invalid\n\n"
        "def grant(by):\n"
        "    if by is None:\n"
        "        raise PermissionDenied('Only staff.')\n"
        "    if by == 1:\n"
        "        raise forms.ValidationError('No.')\n"
        "    raise Invalid('Fine: the vocabulary.')\n"
    )
    found = django_refusals(bad)
    assert len(found) == 3, found
    assert [v.split(" ", 1)[1] for v in found] == [
        "imports Django's PermissionDenied",
        "raises Django's PermissionDenied",
        "raises Django's ValidationError",
    ]


# Backends return facts and never write the portal's database: the provisioning and accounting
# services record what they say (launcher/backends/contract.py). Files are not the ORM: the
# local backend writes its job folders; only ORM writes are forbidden here. The backend modules:
# the Slurm and local packages whole, the cloud app's registry entry and its AWS client (the
# cloud app's own services, which keep its task and node rows, are not backend modules).
BACKEND_FILES = sorted(
    {
        *(ROOT / "launcher" / "slurm").glob("*.py"),
        *(ROOT / "launcher" / "local").glob("*.py"),
        ROOT / "launcher" / "cloud" / "backend.py",
        *(ROOT / "launcher" / "cloud").glob("aws*.py"),
    }
)
ORM_WRITES = {"save", "create", "delete", "bulk_create", "bulk_update"}
ORM_WRITES |= {"get_or_create", "update_or_create"}
# `.update(` is also a set's and a dict's: a write only on a manager or a queryset chain.
QUERYSET_CALLS = {"filter", "exclude", "all", "select_for_update", "select_related", "only"}
WRITE_SERVICES = ("allocations.services", "launcher.services", "launcher.notebooks.services")


def _on_queryset(node: ast.AST) -> bool:
    while isinstance(node, (ast.Call, ast.Attribute)):
        if isinstance(node, ast.Attribute) and node.attr in ("objects", "_default_manager"):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in QUERYSET_CALLS:
                return True
        node = node.func if isinstance(node, ast.Call) else node.value
    return False


def orm_writes(path: Path) -> list[str]:
    """Where the module writes through the ORM or imports a service that writes."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            method = node.func.attr
            if method in ORM_WRITES or (method == "update" and _on_queryset(node.func.value)):
                found.append(f"{path.name}:{node.lineno} calls .{method}(")
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(WRITE_SERVICES):
            found.append(f"{path.name}:{node.lineno} imports {node.module}")
    return found


def test_no_backend_module_writes_the_portals_database():
    assert len(BACKEND_FILES) > 15
    registered_modules = {
        Path(sys.modules[type(entry).__module__].__file__ or "")
        for entry in registered().values()
        if type(entry).__module__ != "launcher.backends.registry"
    }
    assert registered_modules and registered_modules <= set(BACKEND_FILES), registered_modules
    assert [w for path in BACKEND_FILES for w in orm_writes(path)] == []


def test_the_backend_write_guard_catches_a_planted_write(tmp_path):
    planted = tmp_path / "planted_backend.py"
    planted.write_text(
        "from allocations.services import project_members_sync_record\n"
        "seen = set()\nseen.update({1})\n"
        "Job.objects.filter(pk=1).update(state='x')\n"
        "Cluster.objects.get_or_create(allocation=a)\n"
        "job.save(update_fields=['state'])\n"
        "UsageRecord.objects.create(source='x')\n"
    )
    assert [w.split(" ", 1)[1] for w in orm_writes(planted)] == [
        "imports allocations.services",
        "calls .update(",
        "calls .get_or_create(",
        "calls .save(",
        "calls .create(",
    ]
