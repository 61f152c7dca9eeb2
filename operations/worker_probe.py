"""``python -m operations.worker_probe NODE [STALE_SECONDS]``: the worker pods' probe
(operations/liveness.py); exit 0 alive, 1 stuck. A module of its own: the Celery app
(``config.celery``) imports operations.liveness already, and running an imported module
with ``-m`` warns."""

from __future__ import annotations

import os
import sys

from operations.liveness import HEARTBEAT_SECONDS, check

USAGE = "usage: python -m operations.worker_probe NODE [STALE_SECONDS]"


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3) or argv[1].startswith("-"):
        print(USAGE, file=sys.stderr)
        return 2
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")  # the settings to read
    node = argv[1]
    stale_after = float(argv[2]) if len(argv) > 2 else 6 * HEARTBEAT_SECONDS
    alive, why = check(node, stale_after)
    print(why)  # the probe's message in the pod's events
    return 0 if alive else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
