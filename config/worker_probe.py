"""``python -m config.worker_probe NODE [STALE_SECONDS]``: the worker pods' probe
(config/liveness.py); exit 0 alive, 1 stuck. A module of its own: ``config`` imports
config.liveness already (through the Celery app), and running an imported module with
``-m`` warns."""

from __future__ import annotations

import sys

from config.liveness import HEARTBEAT_SECONDS, check


def main(argv: list[str]) -> int:
    node = argv[1]
    stale_after = float(argv[2]) if len(argv) > 2 else 6 * HEARTBEAT_SECONDS
    alive, why = check(node, stale_after)
    print(why)  # the probe's message in the pod's events
    return 0 if alive else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
