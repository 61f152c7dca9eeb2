"""``make bench``: run every ``bench/*_bench.py`` in turn, each in its own process (each
reads DATABASE_URL / REDIS_URL itself and writes its own ``bench/results/`` file)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent


def main() -> None:
    failed = []
    for script in sorted(BENCH.glob("*_bench.py")):
        print(f"== bench.{script.stem}", flush=True)
        done = subprocess.run([sys.executable, "-m", f"bench.{script.stem}"], cwd=BENCH.parent)
        if done.returncode:
            failed.append(script.stem)
    if failed:
        raise SystemExit(f"failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
