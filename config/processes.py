"""The web server's threads (``config.wsgi``, ``config.asgi``): how many, and how Linux
schedules them."""

from __future__ import annotations

import os

from config.env import env_bool, env_int

# Requests whose Django code runs at once in one ASGI worker process, each in a thread kept
# for it (``config.asgi``); PostgreSQL's pool of that process is as large by default.
WEB_THREADS = 8


def web_threads() -> int:
    """``MEMGOV_WEB_THREADS``, at least one."""
    return max(1, env_int("MEMGOV_WEB_THREADS", WEB_THREADS))


def favour_throughput() -> None:
    """Run this thread, and every thread it starts later, under ``SCHED_BATCH``.

    The threads of one CPython process take turns at the GIL. Under Linux's default policy
    a thread whose PostgreSQL or Redis reply has arrived preempts whatever runs on its CPU,
    often the GIL holder of its own process, only to block on the GIL at once: under load
    a cached resolve paid about four involuntary context switches, a bare Django view two
    (bench/README.md, eleventh round). ``SCHED_BATCH`` is the kernel's policy for work that
    wants no such wakeup preemption between its own threads; it keeps the nice value and
    the CPU share. PostgreSQL and Redis keep the default, so their replies still come
    first. Called where the application loads in a worker process, before its request
    threads exist (they inherit the policy). ``MEMGOV_WEB_SCHED_BATCH=false`` keeps the
    default; elsewhere than Linux there is nothing to set."""
    if not env_bool("MEMGOV_WEB_SCHED_BATCH", default=True):
        return
    set_policy = getattr(os, "sched_setscheduler", None)
    if set_policy is None:
        return
    try:
        set_policy(0, os.SCHED_BATCH, os.sched_param(0))
    except OSError:  # a sandbox that refuses it: the default policy is as correct, if slower
        return
