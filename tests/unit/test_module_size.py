"""No first-party module grows past 600 lines (docs/conventions.md, Size): past that, it is
split by what its parts do. Migrations are written by ``makemigrations`` and not counted.

The modules already over the limit when the rule became a test are listed with their size
then: each may shrink, not grow, and leaves the list once it is split."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 600
# Over the limit before the rule was checked (issue 48): still to be split.
ALREADY_OVER = {
    "bench/quality_set.py": 1210,
    "bench/resolve_bench.py": 740,
    "bench/soak.py": 656,
    "clients/python/memgov_client/types.py": 651,
    "dashboard/item.py": 704,
    "approvals/services.py": 659,
    "memory/context.py": 643,
    "memory/search.py": 975,
    "tests/api/test_memories_propose.py": 695,
    "tests/canary/test_canary_read_surfaces.py": 845,
    "tests/unit/test_resolver.py": 728,
}


def _modules() -> dict[str, int]:
    tracked = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.py"],  # noqa: S607
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return {
        path: len((ROOT / path).read_text().splitlines())
        for path in tracked
        if "/migrations/" not in path and (ROOT / path).is_file()
    }


def test_no_module_grows_past_600_lines():
    sizes = _modules()
    too_long = {
        path: lines
        for path, lines in sizes.items()
        if lines > max(LIMIT, ALREADY_OVER.get(path, LIMIT))
    }
    assert too_long == {}, f"split these by what their parts do (limit {LIMIT} lines)"


def test_the_modules_listed_as_over_the_limit_still_are():
    """A module split below the limit, or moved, leaves the list."""
    sizes = _modules()
    gone = {path for path in ALREADY_OVER if sizes.get(path, 0) <= LIMIT}
    assert gone == set()
