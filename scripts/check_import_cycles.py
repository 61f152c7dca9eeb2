"""Fail when the project's own modules import each other in a circle (``make lint``).

import-linter checks the layers between apps; this checks every module, imports inside
functions included, so a cycle cannot hide in a function body. Tests, migrations, bench
and the client package are left out."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIP = {".venv", ".git", "tests", "migrations", "node_modules", "var", "bench", "clients"}


def project_modules() -> dict[str, Path]:
    modules: dict[str, Path] = {}
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT).parts
        if SKIP.intersection(parts):
            continue
        name = ".".join(parts)[:-3].removesuffix(".__init__")
        modules[name] = path
    return modules


def imports_of(path: Path, known: dict[str, Path]) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in found if name in known}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    for start in sorted(graph):
        if start in state:
            continue
        stack: list[tuple[str, list[str]]] = [(start, sorted(graph[start]))]
        path = [start]
        state[start] = 1
        while stack:
            node, todo = stack[-1]
            if not todo:
                stack.pop()
                path.pop()
                state[node] = 2
                continue
            nxt = todo.pop()
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                stack.append((nxt, sorted(graph[nxt])))
    return None


def main() -> int:
    modules = project_modules()
    graph = {name: imports_of(path, modules) - {name} for name, path in modules.items()}
    cycle = find_cycle(graph)
    if cycle:
        print("import cycle: " + " -> ".join(cycle))
        return 1
    print(f"no import cycle among {len(graph)} modules")
    return 0


if __name__ == "__main__":
    sys.exit(main())
