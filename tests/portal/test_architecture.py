"""The architecture rules hold in the code itself: the import floors, standalone packages and
forbidden cycles (import-linter contracts in .importlinter), the backend seam (no code outside
the registry compares backend names or probes a backend's capabilities), no function-level
imports hiding cycles (scripts/function_imports.py), and the types (mypy with django-stubs,
mypy.ini)."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

from scripts.function_imports import domain_files, function_imports

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("portal", "allocations", "benchmarks", "launcher")
REGISTRY = ROOT / "launcher" / "backends" / "registry.py"
BACKEND_NAMES = {"local", "slurm", "aws", "manual"}
CAPABILITY_METHODS = {"provision", "sync_account", "submit", "resume", "observe", "fetch",
                      "cancel", "price_launch", "usage"}


def test_the_import_contracts_hold():
    """portal -> launcher -> benchmarks -> allocations; launcher.workloads and
    benchmarks.harness import no Django and nothing of the portal; services never import
    tasks (they enqueue by name), nor a backend (they ask the registry); no backend imports
    another; the cloud entry sits above its services, which sit above its client."""
    lint = Path(sys.executable).parent / "lint-imports"
    done = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "9 kept, 0 broken" in done.stdout


def test_the_types_check():
    """mypy with django-stubs over the services and the seam (the files in mypy.ini)."""
    mypy = Path(sys.executable).parent / "mypy"
    done = subprocess.run([str(mypy)], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "DJANGO_SETTINGS_MODULE": "portal.settings"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success: no issues found" in done.stdout


def test_at_most_five_function_level_imports_in_domain_code():
    """Imports inside functions hid four import cycles; hoisted, the cycles are gone, and
    no more than five such imports remain (AppConfig.ready, the node-side workloads and the
    benchmark harness excepted)."""
    found = [(path, line) for path in domain_files() for line, _ in function_imports(path)]
    assert len(domain_files()) > 100
    assert len(found) <= 5, found


def test_the_import_counter_sees_an_import_inside_a_function(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("import os\n\ndef f():\n    import sys\n    return sys\n\n"
                     "class C:\n    def g(self):\n        from os import path\n")
    assert [line for line, _ in function_imports(probe)] == [4, 9]


def _names_a_backend(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant) and node.value in BACKEND_NAMES:
        return True
    if isinstance(node, ast.Attribute):
        if node.attr == "backend":  # facility.backend == ..., allocation.facility.backend in ...
            return True
        return (node.attr.lower() in BACKEND_NAMES and isinstance(node.value, ast.Attribute)
                and node.value.attr == "Backend")
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_names_a_backend(e) for e in node.elts)
    return False


def _is_kind_or_source(node: ast.Compare) -> bool:
    # Facility.Kind.LOCAL and UsageRecord.Source.LOCAL share the word but are not backends.
    parts = [node.left, *node.comparators]
    return any(isinstance(p, ast.Attribute) and p.attr in ("kind", "source", "device")
               for p in parts)


def violations(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Compare) and not _is_kind_or_source(node) and any(
                _names_a_backend(p) for p in [node.left, *node.comparators]):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} compares backend names")
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ("hasattr", "getattr") and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and node.args[1].value in CAPABILITY_METHODS):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} probes {node.args[1].value!r}")
    return found


def test_no_code_outside_the_registry_compares_backend_names_or_probes_capabilities():
    files = [p for package in PACKAGES for p in (ROOT / package).rglob("*.py")
             if "migrations" not in p.parts and p != REGISTRY]
    assert len(files) > 100
    assert [v for f in files for v in violations(f)] == []


def test_the_guard_catches_what_it_forbids(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("if facility.backend != 'slurm':\n    pass\n"
                   "ok = hasattr(runner, 'resume')\n"
                   "x = f.backend in (Facility.Backend.AWS,)\n")
    bad = bad.rename(ROOT / "tests" / "portal" / f"_guard_probe_{tmp_path.name}.py")
    try:
        assert len(violations(bad)) == 3
    finally:
        bad.unlink()
