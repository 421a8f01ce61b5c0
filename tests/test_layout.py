"""The package's shape, checked: the product never imports the simulated world, and no module
reaches into another module's private names."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("hooks", "arc_sim", "bench", "tests")


def modules(package: str) -> Iterator[tuple[str, ast.Module]]:
    for path in sorted((ROOT / package).rglob("*.py")):
        yield str(path.relative_to(ROOT)), ast.parse(path.read_text(encoding="utf-8"))


def imports(tree: ast.Module) -> Iterator[ast.ImportFrom | ast.Import]:
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom | ast.Import):
            yield node


def test_the_product_never_imports_the_simulated_world() -> None:
    offenders = [
        f"{path}:{node.lineno}"
        for path, tree in modules("hooks")
        for node in imports(tree)
        if any(
            name == "arc_sim" or name.startswith("arc_sim.")
            for name in (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [alias.name for alias in node.names]
            )
        )
    ]
    assert offenders == []


def test_no_module_imports_private_names_of_another() -> None:
    offenders = [
        f"{path}:{node.lineno} {alias.name}"
        for package in PACKAGES
        for path, tree in modules(package)
        for node in imports(tree)
        if isinstance(node, ast.ImportFrom) and node.level == 0
        for alias in node.names
        if alias.name.startswith("_") and not alias.name.startswith("__")
    ]
    assert offenders == []
