"""`make check` catches what it is for: each of its steps (`make lint`, `make types`, `make
imports`) fails on a planted error of its kind, in a copy of the tree, and names the file.

The copy is the git tree as it stands (tracked and new files, not what git ignores) with the
mypy cache beside it, so the three runs take seconds rather than a cold minute."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
VENV = Path(sys.executable).parent.parent


def _tree_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    )
    return [name for name in listed.stdout.decode().split("\0") if name]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy = tmp_path_factory.mktemp("tree")
    for name in _tree_files():
        source = ROOT / name
        if source.is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy / name)
    cache = ROOT / "var" / "mypy-cache"
    if cache.is_dir():
        shutil.copytree(cache, copy / "var" / "mypy-cache")
    return copy


@pytest.fixture
def planted(tree: Path) -> Iterator[Callable[[str, str], None]]:
    """Append a line to a file of the copy; the file is put back afterwards."""
    kept: dict[Path, str] = {}

    def plant(name: str, line: str) -> None:
        path = tree / name
        kept.setdefault(path, path.read_text())
        path.write_text(path.read_text() + line + "\n")

    yield plant
    for path, text in kept.items():
        path.write_text(text)


def _make(tree: Path, target: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_"))}
    return subprocess.run(
        ["make", "--no-print-directory", "-C", str(tree), target, f"VENV={VENV}"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )


@pytest.mark.parametrize(
    ("target", "name", "line", "said"),
    [
        ("lint", "allocations/selectors.py", "import json", "F401"),
        ("lint", "launcher/estimates.py", "x = [1,2]", "would be reformatted"),
        ("types", "allocations/selectors.py", 'PLANTED: int = "not an int"', "assignment"),
        ("imports", "allocations/selectors.py", "import launcher.selectors  # noqa", "BROKEN"),
    ],
    ids=["lint-error", "format", "type-error", "import-contract"],
)
def test_each_step_of_make_check_fails_on_a_planted_error(tree, planted, target, name, line, said):
    assert _make(tree, target).returncode == 0  # the tree as it stands passes the step
    planted(name, line)
    done = _make(tree, target)
    out = done.stdout + done.stderr
    assert done.returncode != 0 and said in out
    assert name in out or name.replace("/", ".").removesuffix(".py") in out
