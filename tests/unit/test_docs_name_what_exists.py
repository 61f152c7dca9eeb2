"""What the docs name exists (issue 48, point 6): every repository path, first-party module
(``memory.lifecycle``, ``core.authority.may_review``) and ``MEMGOV_*`` setting written in
docs/*.md and README.md. Decision records (docs/decisions/) are history and keep the names
of their day. A finding names the doc, the line and the missing thing; fix the doc, not the
code (unless the doc describes code that should exist)."""

from __future__ import annotations

import ast
import re
import subprocess
from collections.abc import Iterator
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SPAN = re.compile(r"``?([^`\n]+?)``?")
SETTING = re.compile(r"\bMEMGOV_[A-Z0-9_]*[A-Z0-9]\b")
DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
# A placeholder in a path (``templates/emails/<name>_body.txt``, ``bench/…``) stands for
# any name: the path is checked as a pattern.
PLACEHOLDER = re.compile(r"<[^>]*>|…|\.\.\.|\{[^}]*\}|\*")
FILE_SUFFIXES = (
    *(".py", ".md", ".toml", ".txt", ".html", ".yml", ".yaml", ".json", ".lock"),
    *(".cfg", ".ini", ".conf", ".sh", ".css", ".js", ".sql", ".csv", ".jsonl"),
)


def _docs() -> list[Path]:
    return [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]


@cache
def _tracked() -> tuple[str, ...]:
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],  # noqa: S607
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return tuple(line for line in out.splitlines() if (ROOT / line).exists())


@cache
def _top_level() -> frozenset[str]:
    return frozenset(path.split("/", 1)[0] for path in _tracked())


@cache
def _packages() -> frozenset[str]:
    """First-party top-level packages: the directories with an ``__init__.py``."""
    return frozenset(p.split("/", 1)[0] for p in _tracked() if re.fullmatch(r"\w+/__init__\.py", p))


def _lines(doc: Path) -> Iterator[tuple[int, str]]:
    """The doc's lines outside fenced blocks (commands and examples, not names)."""
    fenced = False
    for number, line in enumerate(doc.read_text().splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def _path_exists(path: str, *, anywhere: bool = False) -> bool:
    """Whether a tracked file or directory is ``path`` (from the root, or anywhere below
    it), a placeholder standing for any one name."""
    path = path.rstrip("/")
    if not anywhere and not PLACEHOLDER.search(path):
        return (ROOT / path).exists() or any(p.startswith(f"{path}/") for p in _tracked())
    pattern = "".join(
        "[^/]*" if PLACEHOLDER.fullmatch(piece) else re.escape(piece) for piece in _pieces(path)
    )
    if anywhere:
        pattern = f"(.*/)?{pattern}"
    return any(re.fullmatch(f"{pattern}(/.*)?", p) for p in _tracked())


def _pieces(path: str) -> list[str]:
    """``path`` cut into literal text and placeholders, in order."""
    pieces: list[str] = []
    at = 0
    for found in PLACEHOLDER.finditer(path):
        pieces += [path[at : found.start()], found.group()]
        at = found.end()
    return [*pieces, path[at:]]


def _as_path(token: str) -> str | None:
    """The repository path a token names, or None when it names none: its first segment is
    a top-level entry of the repository, or it ends like a file and holds a ``/``."""
    token = token.strip("()[],;:'\"")
    token = re.sub(r"(:\d+(-\d+)?|#.*|::.*)$", "", token)
    if not token or "://" in token or token.startswith(("/", "$", "~", ".", "-")):
        return None
    if "/" not in token:
        return token if token in _top_level() and "." in token else None
    first = token.split("/", 1)[0]
    if first in _top_level() or token.endswith(FILE_SUFFIXES):
        return token
    return None


@cache
def _module_file(dotted: str) -> Path | None:
    path = ROOT.joinpath(*dotted.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


@cache
def _names(module: Path) -> frozenset[str]:
    """What a module binds at its top level, and its classes' members as ``Class.name``."""
    body = ast.parse(module.read_text()).body
    names = set(_bound(body))
    for node in body:
        if isinstance(node, ast.ClassDef):
            names.update(f"{node.name}.{name}" for name in _bound(node.body))
    return frozenset(names)


def _bound(nodes: list[ast.stmt]) -> set[str]:
    names: set[str] = set()
    for node in nodes:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.If, ast.Try)):
            names.update(_bound(node.body + node.orelse))
    return names


def _module_missing(dotted: str) -> str | None:
    """What of a first-party dotted name does not exist: the longest prefix that is a
    module exists; the next name must be bound in it (a function, a class, a constant),
    and a class's member in the class. None when it all exists."""
    parts = dotted.split(".")
    end = next(n for n in range(len(parts), 0, -1) if _module_file(".".join(parts[:n])))
    module, rest = ".".join(parts[:end]), parts[end:]
    found = _module_file(module)
    assert found is not None
    names = _names(found)
    if rest and rest[0] not in names:
        return f"{module} has no {rest[0]}"
    member = ".".join(rest[:2])
    if len(rest) > 1 and any(n.startswith(f"{rest[0]}.") for n in names) and member not in names:
        return f"{module}.{rest[0]} has no {rest[1]}"
    return None


@cache
def _code_text() -> str:
    """Every tracked file but the docs and the tests: where a setting is read or set."""
    texts = []
    for path in _tracked():
        if path.endswith(".md") or path.startswith(("tests/", "docs/")):
            continue
        try:
            texts.append((ROOT / path).read_text())
        except (UnicodeDecodeError, IsADirectoryError):
            continue
    return "\n".join(texts)


def _setting_exists(name: str) -> bool:
    if re.search(rf"\b{name}\b", _code_text()):
        return True
    # ``<NAME>_FILE`` is read for every secret by one helper (docs/conventions.md, rule 17).
    return name.endswith("_FILE") and _setting_exists(name.removesuffix("_FILE"))


def _missing_path(path: str) -> str | None:
    """None when the path exists: from the repository's root (``memory/resolution``: the
    module), or as the end of a tracked path (``overlays/<name>/…`` under ``deploy/k8s/``),
    or as a file the repository ignores (one an operator writes, ``deploy/memgov.env``);
    a ``dir/module.name`` is checked as ``dir.module.name``."""
    if _path_exists(path) or _path_exists(f"{path}.py") or _ignored(path):
        return None
    if _path_exists(path, anywhere=True):
        return None
    head, _, last = path.rpartition("/")
    if "." in last and not path.endswith(FILE_SUFFIXES):
        return _module_missing(f"{head}/{last}".replace("/", "."))
    return f"no file or directory {path}"


def _ignored(path: str) -> bool:
    return (
        subprocess.run(  # noqa: S603 - a path from the docs as git's argument, no shell
            ["git", "check-ignore", "-q", "--no-index", path],  # noqa: S607
            cwd=ROOT,
            check=False,
        ).returncode
        == 0
    )


def _another_repository(before: str) -> bool:
    """A path right after ``owner/name`` (not in backticks) is that repository's."""
    return re.search(r"(^|\s)[\w.-]+/[\w.-]+\s*$", before) is not None


def findings(docs: list[Path] | None = None) -> list[str]:
    found: list[str] = []
    for doc in _docs() if docs is None else docs:
        where = doc.relative_to(ROOT) if doc.is_relative_to(ROOT) else doc.name
        for number, line in _lines(doc):
            for name in SETTING.findall(line):
                if not _setting_exists(name):
                    found.append(f"{where}:{number}: setting {name} is read nowhere")
            for span in SPAN.finditer(line):
                if _another_repository(line[: span.start()]):
                    continue
                tokens = span.group(1).split()
                for token in tokens:
                    found += [f"{where}:{number}: {m}" for m in _missing(token, len(tokens) > 1)]
    return found


def _missing(token: str, in_command: bool) -> list[str]:
    """What a token of a span names that does not exist. In a command (a span of several
    words) only file names are paths: ``deploy/memgov-web`` there is a Kubernetes name."""
    path = _as_path(token)
    if path is not None:
        if in_command and not path.endswith(FILE_SUFFIXES):
            return []
        missing = _missing_path(path)
        return [] if missing is None else [missing]
    dotted = DOTTED.fullmatch(token.strip("()[],;:'\"").removesuffix("()"))
    if not dotted or dotted.group().split(".")[0] not in _packages():
        return []
    name = dotted.group()
    if f'"{name}"' in _code_text() or f"'{name}'" in _code_text():
        return []  # a name the code writes out: an event type, an audit action
    missing = _module_missing(name)
    return [] if missing is None else [f"`{name}`: {missing}"]


def test_every_path_module_and_setting_the_docs_name_exists():
    assert findings() == []


def test_the_check_finds_a_missing_path_module_and_setting(tmp_path):
    doc = tmp_path / "made_up.md"
    doc.write_text(
        "Real: `memory/generations.py`, `memory.lifecycle`, `core.authority`,\n"
        "MEMGOV_ERASURE_BATCH.\n"
        "```\nmemory/inside_a_fence.py\n```\n"
        "Gone: `memory/no_such_module.py`, `memory.no_such_module`,\n"
        "`memory.generations.no_such_function`, and MEMGOV_NO_SUCH_SETTING.\n"
    )

    assert findings([doc]) == [
        "made_up.md:6: no file or directory memory/no_such_module.py",
        "made_up.md:6: `memory.no_such_module`: memory has no no_such_module",
        "made_up.md:7: setting MEMGOV_NO_SUCH_SETTING is read nowhere",
        "made_up.md:7: `memory.generations.no_such_function`: memory.generations has no "
        "no_such_function",
    ]
