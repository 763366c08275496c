"""Print the largest modules and the longest functions, to keep module and function sizes honest.

Run: python scripts/sizes.py [--top N] [PACKAGE_DIR ...]
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

PACKAGES = ["graphwright", "graphs", "nodes", "tools", "checkpoints", "graphwright_errors"]


def modules(roots: list[str]) -> list[Path]:
    """Every Python source file under the given package directories."""
    return sorted(p for root in roots for p in Path(root).rglob("*.py"))


def functions(path: Path) -> list[tuple[int, str]]:
    """(lines, qualified name) for every function and method defined in one module."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                found.append((child.end_lineno - child.lineno + 1, f"{path}:{name}"))
                visit(child, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")

    visit(tree, "")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("roots", nargs="*", default=PACKAGES)
    args = parser.parse_args()
    paths = modules(args.roots)
    sizes = sorted(
        ((len(p.read_text(encoding="utf-8").splitlines()), str(p)) for p in paths), reverse=True
    )
    print(f"Largest modules ({len(paths)} modules):")
    for lines, name in sizes[: args.top]:
        print(f"  {lines:5d}  {name}")
    funcs = sorted((f for p in paths for f in functions(p)), reverse=True)
    print(f"Longest functions ({len(funcs)} functions):")
    for lines, name in funcs[: args.top]:
        print(f"  {lines:5d}  {name}")


if __name__ == "__main__":
    main()
