"""Fail on first-party code that reaches into private attributes of other libraries.

A name with one leading underscore is a library's own business: it changes in a patch
release without notice (psycopg's ``_prepare_cursor``, redis-py's ``connection._sock``,
DRF's ``request._request``). First-party code may use underscored names it defines itself
(an attribute assigned, or a function, class or module-level name defined, in the
project's code outside tests; tests and benchmarks may also use each other's) and dunders; any other
``something._name``, or ``from library import _name``, is reported.

    python scripts/check_private_access.py [paths…]   # default: the project's packages

Run by ``make lint``. Exit status 1 when something is reported."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIP = {".venv", "var", "migrations", "node_modules", ".git"}
# Underscored names that their library's documentation makes public.
DOCUMENTED = {
    "_meta",  # Django's Model _meta API
    "_default_manager",  # Django: Model._default_manager
    "_base_manager",
    "_replace",  # namedtuple (urllib.parse.SplitResult)
    "_asdict",
    "_fields",
    "_make",
    "_exit",  # os._exit: the documented exit without cleanup, for a child process
}


def python_files(paths: Iterable[Path]) -> Iterator[Path]:
    for path in paths:
        if path.is_file() and path.suffix == ".py":
            yield path
        elif path.is_dir():
            for found in sorted(path.rglob("*.py")):
                if not SKIP.intersection(found.relative_to(path).parts):
                    yield found


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def own_names(trees: Iterable[ast.AST]) -> set[str]:
    """Underscored names the project defines: functions, classes, assigned attributes and
    variables, parameters. Using those is using our own code."""
    names: set[str] = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.alias) and node.asname:
                names.add(node.asname)
    return {name for name in names if _private(name)}


def reports(path: Path, tree: ast.AST, ours: set[str], first_party: set[str]) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            if node.attr not in ours and node.attr not in DOCUMENTED:
                found.append(f"{path}:{node.lineno}: private attribute .{node.attr}")
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] in first_party:
                continue
            for alias in node.names:
                if _private(alias.name):
                    found.append(
                        f"{path}:{node.lineno}: private name {alias.name} of {node.module}"
                    )
    return found


def main(argv: list[str]) -> int:
    packages = [p for p in ROOT.iterdir() if p.is_dir() and (p / "__init__.py").exists()]
    first_party = {p.name for p in packages} | {"memgov_client"}
    paths = [Path(a) for a in argv] or [*packages, ROOT / "manage.py", ROOT / "clients"]
    trees = {path: ast.parse(path.read_text(encoding="utf-8")) for path in python_files(paths)}
    support = {"tests", "bench", "scripts"}
    code = [p for p in packages if p.name not in support]
    ours_in_code = own_names(
        ast.parse(path.read_text(encoding="utf-8"))
        for path in python_files([*code, ROOT / "clients"])
        if "tests" not in path.parts
    )
    ours_anywhere = ours_in_code | own_names(
        ast.parse(path.read_text(encoding="utf-8"))
        for path in python_files([ROOT / name for name in support])
    )
    found = []
    for path, tree in trees.items():
        # Tests and benchmarks may use the helpers they define for each other.
        inside = path.resolve().is_relative_to(ROOT)
        supporting = inside and support.intersection(path.resolve().relative_to(ROOT).parts)
        ours = ours_anywhere if supporting else ours_in_code | own_names([tree])
        found += reports(path, tree, ours, first_party)
    for line in found:
        print(line)
    if found:
        print(f"{len(found)} uses of other libraries' private names", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
