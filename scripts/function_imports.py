"""List the imports written inside functions in the portal's domain code (issue 20: at most 5,
AppConfig.ready, the node-side workloads and the benchmark harness excepted).

    python scripts/function_imports.py        # one line per import, then the count
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS = ("allocations", "launcher", "portal")
EXCEPTED = ("launcher/workloads/", "benchmarks/harness", "/migrations/", "/management/")


def function_imports(path: Path) -> list[tuple[int, str]]:
    """(line, text) of each import inside a function of this file, except in AppConfig.ready."""
    tree = ast.parse(path.read_text(), str(path))
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST, inside: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, child.name)
            elif isinstance(child, ast.ClassDef):
                visit(child, None if inside is None else inside)
            elif isinstance(child, (ast.Import, ast.ImportFrom)) and inside is not None:
                if not (inside == "ready" and path.name == "apps.py"):
                    found.append((child.lineno, ast.unparse(child)))
            else:
                visit(child, inside)

    visit(tree, None)
    return found


def domain_files() -> list[Path]:
    files = []
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if not any(e in "/" + rel for e in EXCEPTED):
                files.append(path)
    return files


def main() -> int:
    total = 0
    for path in domain_files():
        for line, text in function_imports(path):
            print(f"{path.relative_to(ROOT)}:{line}: {text}")
            total += 1
    print(f"{total} function-level imports")
    return 0


if __name__ == "__main__":
    sys.exit(main())
