"""Soak: minutes of mixed load against a production-like stack, with its parts restarted.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/memgov_soak \\
        .venv/bin/python -m bench.soak [--seconds 600] [--clients 4] [--grace 300]

(``SOAK_SECONDS``, ``SOAK_CLIENTS``, ``SOAK_GRACE`` set the same.) The script recreates the
database, migrates it and loads the demo tenant, then starts its own stack:

- a Redis on a free port (cache in db 1, broker in db 0), no persistence;
- gunicorn as production runs it (``config.wsgi:application`` with
  ``deploy/gunicorn.conf.py``'s gthread workers, ``DEBUG=false``), 2 workers, but
  ``--max-requests 0``, so a leak shows as growth instead of being hidden by recycled
  workers;
- a Celery worker (prefork, concurrency 2) and Celery beat (the sweeps).

Clients (agent, and the reviewers rita and lena) run mixed work: propose preferences and
task facts, approve, wait for the worker to activate, resolve, retire, revoke a source,
correct a value (``If-Match``) and approve the correction, reject. Faults, at fixed points
of the run: the worker is stopped gracefully (SIGTERM) at 1/4 and killed (SIGKILL, its
whole process group) at 3/4, each time restarted; Redis is stopped at 1/2 and restarted
five seconds later (empty: cache and queued tasks are lost).

A checker counts **stale reads**: a resolve, sent after a retire or revoke call returned
200, that still lists the retired item (in ``facts`` or ``plans``). Every client resolves
right after its own retire/revoke, and a checker thread keeps resolving recently retired
subjects. At the end the load stops and the script waits up to the grace period for the
versions still in ``checking`` (the sweep re-enqueues lost gate runs after two minutes),
then counts the ones **stuck**. It also reports requests, answers by status, and the RSS of
the web and worker processes (sampled every ten seconds). Both counts must be zero; the
exit status is 1 otherwise. The report is printed and written to
``bench/results/soak-<date>.json``.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import psycopg

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/memgov_soak"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# --- processes --------------------------------------------------------------------------


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = collections.defaultdict(list)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree[ppid].append(int(entry.name))
    return tree


def _rss_kib(pid: int) -> int:
    """RSS of a process and all its descendants, in KiB (0 when it is gone)."""
    tree = _children()
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        try:
            for line in Path(f"/proc/{current}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
        todo.extend(tree.get(current, []))
    return total


class Stack:
    """Redis, gunicorn, a Celery worker and beat: the production shape, on loopback."""

    def __init__(self, env: dict[str, str], logs: Path) -> None:
        self.env = env
        self.logs = logs
        self.redis_port = _free_port()
        self.web_port = _free_port()
        self.redis: subprocess.Popen[bytes] | None = None
        self.web: subprocess.Popen[bytes] | None = None
        self.worker: subprocess.Popen[bytes] | None = None
        self.beat: subprocess.Popen[bytes] | None = None
        self.worker_starts = 0

    @property
    def redis_url(self) -> str:
        return f"redis://127.0.0.1:{self.redis_port}/0"

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        log = (self.logs / f"{name}.log").open("ab")
        return subprocess.Popen(
            argv, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip

    def start_redis(self) -> None:
        self.redis = self._spawn(
            "redis",
            ["redis-server", "--bind", "127.0.0.1", "--port", str(self.redis_port),
             "--save", "", "--appendonly", "no", "--dir", str(self.logs)],
        )  # fmt: skip
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.redis_port), timeout=1) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.1)
        raise SystemExit("redis did not start")

    def stop_redis(self) -> None:
        assert self.redis is not None
        self.redis.terminate()
        self.redis.wait(timeout=30)

    def start_web(self) -> None:
        self.web = self._spawn(
            "web",
            [sys.executable, "-m", "gunicorn", "config.wsgi:application",
             "-c", "deploy/gunicorn.conf.py", "--bind", f"127.0.0.1:{self.web_port}",
             "--workers", "2", "--max-requests", "0"],
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.base}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.3)
        raise SystemExit("gunicorn did not start")

    def start_worker(self) -> None:
        self.worker_starts += 1
        self.worker = self._spawn(
            "worker",
            [sys.executable, "-m", "celery", "-A", "config", "worker", "--loglevel", "INFO",
             "--concurrency", "2", "--hostname", f"soak{self.worker_starts}@%h"],
        )  # fmt: skip

    def stop_worker(self, *, kill: bool) -> None:
        assert self.worker is not None
        if kill:
            os.killpg(self.worker.pid, signal.SIGKILL)
        else:
            self.worker.terminate()
        self.worker.wait(timeout=120)

    def start_beat(self) -> None:
        self.beat = self._spawn(
            "beat",
            [sys.executable, "-m", "celery", "-A", "config", "beat", "--loglevel", "INFO",
             "--schedule", str(self.logs / "celerybeat-schedule")],
        )  # fmt: skip

    def stop_all(self) -> None:
        for proc in (self.beat, self.worker, self.web, self.redis):
            if proc is not None and proc.poll() is None:
                proc.terminate()
        for proc in (self.beat, self.worker, self.web, self.redis):
            if proc is None:
                continue
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)


# --- load -------------------------------------------------------------------------------


@dataclass
class Tally:
    lock: threading.Lock = field(default_factory=threading.Lock)
    requests: int = 0
    by_status: collections.Counter[str] = field(default_factory=collections.Counter)
    by_operation: collections.Counter[str] = field(default_factory=collections.Counter)
    errors: collections.Counter[str] = field(default_factory=collections.Counter)
    stale_reads: list[dict[str, Any]] = field(default_factory=list)
    stale_checks: int = 0
    retired: list[tuple[str, str, dict[str, str], float]] = field(default_factory=list)
    flows: collections.Counter[str] = field(default_factory=collections.Counter)
    # Changes refused with 503 cache-unavailable (nothing changed; Redis unreachable) and
    # asked again after Retry-After, as a client should: not errors unless never accepted.
    refused_then_retried: collections.Counter[str] = field(default_factory=collections.Counter)

    def count(self, op: str, status: str, *, retried: bool = False) -> None:
        with self.lock:
            self.requests += 1
            self.by_status[status] += 1
            self.by_operation[op] += 1
            if retried:
                self.refused_then_retried[op] += 1
            elif not status.startswith("2"):
                self.errors[f"{op} {status}"] += 1


# How long a client keeps asking again a change refused while Redis is unreachable.
CACHE_UNAVAILABLE_PATIENCE = 60.0


def _cache_unavailable(answer: httpx.Response) -> bool:
    return (
        answer.status_code == 503
        and answer.headers.get("content-type", "").startswith("application/problem+json")
        and str(answer.json().get("type", "")).endswith("/cache-unavailable")
    )


class Client:
    def __init__(self, base: str, keys: dict[str, str], tally: Tally) -> None:
        self.http = httpx.Client(base_url=f"{base}/api/v1", timeout=30)
        self.keys = keys
        self.tally = tally

    def call(
        self, who: str, method: str, path: str, op: str, body: Any = None, **headers: str
    ) -> httpx.Response | None:
        deadline = time.monotonic() + CACHE_UNAVAILABLE_PATIENCE
        while True:
            try:
                answer = self.http.request(
                    method,
                    path,
                    json=body,
                    headers={"Authorization": f"Bearer {self.keys[who]}", **headers},
                )
            except httpx.HTTPError as exc:
                self.tally.count(op, type(exc).__name__)
                return None
            retry = _cache_unavailable(answer) and time.monotonic() < deadline
            self.tally.count(op, str(answer.status_code), retried=retry)
            if not retry:
                return answer
            time.sleep(float(answer.headers.get("Retry-After", "1")))

    def resolve(self, subject: str, context: dict[str, str]) -> set[str] | None:
        answer = self.call(
            "agent", "POST", "/resolve", "resolve", {"subject": subject, "context": context}
        )
        if answer is None or answer.status_code != 200:
            return None
        body = answer.json()
        return {f["memory_id"] for f in body["facts"]} | {p["memory_id"] for p in body["plans"]}

    def check_not_served(
        self, subject: str, memory_ids: list[str], context: dict[str, str]
    ) -> None:
        """A resolve sent after the retire/revoke returned must not list the items."""
        served = self.resolve(subject, context)
        if served is None:
            return
        with self.tally.lock:
            self.tally.stale_checks += 1
            for memory_id in memory_ids:
                if memory_id in served:
                    self.tally.stale_reads.append(
                        {"subject": subject, "memory_id": memory_id, "at": time.time()}
                    )


def _future(days: int = 30) -> str:
    return (datetime.now(UTC) + timedelta(days=days)).isoformat()


class Flows:
    """One client's work: each flow is a short story from the seeds, run to its end."""

    def __init__(self, client: Client, rng: random.Random, stop: threading.Event) -> None:
        self.c = client
        self.rng = rng
        self.stop = stop

    def entity(self) -> str | None:
        answer = self.c.call(
            "agent", "POST", "/entities", "entity",
            {"kind": "customer", "name": f"Soak {uuid.uuid4().hex[:10]}", "aliases": []},
        )  # fmt: skip
        return answer.json()["id"] if answer is not None and answer.status_code == 201 else None

    def source(self, kind: str, content: str) -> str | None:
        body = {"kind": kind, "content": content, "external_ref": f"ORD-{uuid.uuid4().hex[:8]}"}
        answer = self.c.call("agent", "POST", "/sources", "source", body)
        return answer.json()["id"] if answer is not None and answer.status_code == 201 else None

    def wait_status(self, memory_id: str, wanted: set[str], seconds: float = 90) -> str | None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not self.stop.is_set():
            answer = self.c.call("agent", "GET", f"/memories/{memory_id}", "get")
            if answer is not None and answer.status_code == 200:
                status = str(answer.json()["status"])
                if status in wanted:
                    return status
            time.sleep(0.5)
        return None

    def approve(self, memory_id: str) -> bool:
        answer = self.c.call(
            "rita", "POST", f"/memories/{memory_id}/approve", "approve", {"comment": "checked"}
        )
        return answer is not None and answer.status_code == 200

    def retire(self, subject: str, memory_id: str, context: dict[str, str]) -> None:
        self.c.resolve(subject, context)  # warm the cache with the item in it
        answer = self.c.call(
            "rita", "POST", f"/memories/{memory_id}/retire", "retire",
            {"reason": "customer withdrew it", "in_flight": "continue"},
        )  # fmt: skip
        if answer is None or answer.status_code != 200:
            return
        returned = time.time()
        self.c.check_not_served(subject, [memory_id], context)
        with self.c.tally.lock:
            self.c.tally.retired.append((subject, memory_id, context, returned))

    def preference(self) -> None:
        """Seed 002: a preference goes straight to the checks, is used, then retired."""
        subject = self.entity()
        chat = self.source("message", "I normally want deliveries at home, 12 Elm Street.")
        if subject is None or chat is None:
            return
        answer = self.c.call(
            "agent", "POST", "/memories", "propose",
            {"kind": "preference", "subject": subject, "field": "delivery_address",
             "value": "12 Elm Street", "statement": "Deliveries go home.", "scope": {},
             "owner": "sam", "expires_at": None, "sources": [chat]},
        )  # fmt: skip
        if answer is None or answer.status_code != 201:
            return
        memory_id = answer.json()["id"]
        if self.wait_status(memory_id, {"active", "checks_failed"}) != "active":
            return
        self.c.tally.flows["preference active"] += 1
        self.retire(subject, memory_id, {})

    def task_fact(self) -> None:
        """Seed 002/004: an order's record, reviewed, then revoked, corrected or retired."""
        subject = self.entity()
        task = f"order-{uuid.uuid4().hex[:6]}"
        record = self.source("business_record", f"Order {task}: deliver to 4 Dock Road.")
        if subject is None or record is None:
            return
        context = {"task": task}
        answer = self.c.call(
            "agent", "POST", "/memories", "propose",
            {"kind": "task_fact", "subject": subject, "field": "delivery_address",
             "value": "4 Dock Road", "statement": f"{task} goes to the office.",
             "scope": {"task": task}, "owner": "sam", "expires_at": _future(),
             "sources": [record]},
        )  # fmt: skip
        if answer is None or answer.status_code != 201:
            return
        memory_id = answer.json()["id"]
        if self.rng.random() < 0.1:
            self.c.call(
                "rita", "POST", f"/memories/{memory_id}/reject", "reject",
                {"reason": "not what the order says"},
            )  # fmt: skip
            self.c.tally.flows["task_fact rejected"] += 1
            return
        if not self.approve(memory_id):
            return
        if self.wait_status(memory_id, {"active", "checks_failed"}) != "active":
            return
        self.c.tally.flows["task_fact active"] += 1
        then = self.rng.random()
        if then < 0.35:
            self.c.resolve(subject, context)
            revoked = self.c.call(
                "rita", "POST", f"/sources/{record}/revoke", "revoke",
                {"reason": "the record was withdrawn"},
            )  # fmt: skip
            if revoked is not None and revoked.status_code == 200:
                returned = time.time()
                self.c.check_not_served(subject, [memory_id], context)
                with self.c.tally.lock:
                    self.c.tally.retired.append((subject, memory_id, context, returned))
                self.c.tally.flows["source revoked"] += 1
        elif then < 0.7:
            self.correct(subject, memory_id, context)
        else:
            self.retire(subject, memory_id, context)
            self.c.tally.flows["task_fact retired"] += 1

    def correct(self, subject: str, memory_id: str, context: dict[str, str]) -> None:
        """Seed 004: the address changes; the correction is reviewed and replaces it."""
        head = self.c.call("agent", "GET", f"/memories/{memory_id}", "get")
        if head is None or head.status_code != 200:
            return
        answer = self.c.call(
            "agent", "POST", f"/memories/{memory_id}/versions", "correct",
            {"value": "7 Harbour Lane", "statement": "moved to the harbour office"},
            **{"If-Match": head.headers.get("ETag", "")},
        )  # fmt: skip
        if answer is None or answer.status_code != 201:
            return
        if answer.json()["status"] == "pending_review" and not self.approve(memory_id):
            return
        if self.wait_status(memory_id, {"active", "checks_failed"}) == "active":
            self.c.tally.flows["corrected"] += 1
            self.c.resolve(subject, context)

    def run(self) -> None:
        while not self.stop.is_set():
            pick = self.rng.random()
            try:
                if pick < 0.4:
                    self.preference()
                else:
                    self.task_fact()
            except (KeyError, ValueError) as exc:  # an answer without the documented shape
                self.c.tally.count("client", f"bad answer: {exc!r}"[:80])


def checker(client: Client, stop: threading.Event) -> None:
    """Resolve recently retired subjects again and again, from a fresh connection."""
    rng = random.Random(7)
    while not stop.is_set():
        with client.tally.lock:
            recent = client.tally.retired[-50:]
        if not recent:
            time.sleep(0.5)
            continue
        subject, memory_id, context, _ = rng.choice(recent)
        client.check_not_served(subject, [memory_id], context)
        time.sleep(0.05)


# --- setup and report -------------------------------------------------------------------


def _recreate_database(url: str) -> None:
    name = urlsplit(url).path.lstrip("/")
    admin = urlsplit(url)._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def _manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True,
        text=True, check=True,
    )  # fmt: skip
    return done.stdout.strip().splitlines()[-1].strip()


def _count_checking(env: dict[str, str]) -> int:
    with psycopg.connect(env["DATABASE_URL"]) as conn:
        row = conn.execute(
            "SELECT count(*) FROM memory_memoryversion WHERE status = 'checking'"
        ).fetchone()
    return int(row[0]) if row else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=int(os.environ.get("SOAK_SECONDS", 600)))
    parser.add_argument("--clients", type=int, default=int(os.environ.get("SOAK_CLIENTS", 4)))
    parser.add_argument("--grace", type=int, default=int(os.environ.get("SOAK_GRACE", 300)))
    args = parser.parse_args()

    logs = Path(tempfile.mkdtemp(prefix="memgov-soak-"))
    print(f"logs in {logs}", file=sys.stderr)
    database = os.environ.get("DATABASE_URL", DEFAULT_DB)
    env = {
        **os.environ,
        "DATABASE_URL": database,
        "SECRET_KEY": os.environ.get("SECRET_KEY", "soak-only-secret-key"),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DEBUG": "false",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "MEMGOV_VAR_DIR": str(logs),
        "MEMGOV_THROTTLE_RATE": "1000000/min",
        "EMAIL_URL": "dummy://",
        "LOG_LEVEL": "WARNING",
    }
    stack = Stack(env, logs)
    env["REDIS_URL"] = stack.redis_url
    _recreate_database(database)
    stack.start_redis()
    _manage(env, "migrate", "--no-input")
    _manage(env, "load_demo")
    keys = {
        "agent": _manage(env, "create_api_key", "--tenant", "demo", "--agent", "soak",
                         "--labels", "staff"),
        "rita": _manage(env, "create_api_key", "--tenant", "demo", "--user", "rita"),
    }  # fmt: skip

    tally = Tally()
    stop = threading.Event()
    rss: list[dict[str, Any]] = []
    faults: list[dict[str, Any]] = []
    load: list[float] = []
    started = time.monotonic()
    stuck = -1
    try:
        stack.start_web()
        stack.start_worker()
        stack.start_beat()
        time.sleep(5)

        def sample() -> None:
            rss.append({
                "t": round(time.monotonic() - started),
                "web_kib": _rss_kib(stack.web.pid) if stack.web else 0,
                "worker_kib": _rss_kib(stack.worker.pid) if stack.worker else 0,
                "worker_start": stack.worker_starts,
                "load": _loadavg(),
            })  # fmt: skip

        threads = [
            threading.Thread(
                target=Flows(Client(stack.base, keys, tally), random.Random(i), stop).run,
                daemon=True,
            )
            for i in range(args.clients)
        ]
        threads.append(
            threading.Thread(
                target=checker, args=(Client(stack.base, keys, tally), stop), daemon=True
            )
        )
        started = time.monotonic()
        for thread in threads:
            thread.start()
        plan = [
            (args.seconds * 0.25, "worker SIGTERM + restart"),
            (args.seconds * 0.5, "redis stop, 5 s down, restart"),
            (args.seconds * 0.75, "worker SIGKILL + restart"),
        ]
        next_sample = 0.0
        while (elapsed := time.monotonic() - started) < args.seconds:
            if elapsed >= next_sample:
                sample()
                load.append(os.getloadavg()[0])
                next_sample += 10
            if plan and elapsed >= plan[0][0]:
                _, what = plan.pop(0)
                faults.append({"t": round(elapsed), "fault": what})
                print(f"[{elapsed:5.0f}s] {what}", file=sys.stderr, flush=True)
                if what.startswith("worker"):
                    stack.stop_worker(kill="SIGKILL" in what)
                    stack.start_worker()
                else:
                    stack.stop_redis()
                    time.sleep(5)
                    stack.start_redis()
            time.sleep(0.5)
        sample()
        stop.set()
        for thread in threads:
            thread.join(timeout=120)
        load_seconds = round(time.monotonic() - started)

        deadline = time.monotonic() + args.grace
        stuck = _count_checking(env)
        while stuck and time.monotonic() < deadline:
            time.sleep(5)
            stuck = _count_checking(env)
        waited = round(args.grace - max(0.0, deadline - time.monotonic()))
        sample()
    finally:
        stack.stop_all()

    web = [s["web_kib"] for s in rss if s["web_kib"]]
    worker_runs: dict[int, list[int]] = collections.defaultdict(list)
    for s in rss:
        if s["worker_kib"]:
            worker_runs[s["worker_start"]].append(s["worker_kib"])
    report = {
        "command": " ".join(["python -m bench.soak", *sys.argv[1:]]),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "seconds": load_seconds,
        "clients": args.clients,
        "requests": tally.requests,
        "requests_per_second": round(tally.requests / max(load_seconds, 1), 1),
        "by_status": dict(tally.by_status.most_common()),
        "errors": dict(tally.errors.most_common()),
        "refused_while_redis_unreachable_then_retried": dict(tally.refused_then_retried),
        "by_operation": dict(tally.by_operation.most_common()),
        "flows": dict(tally.flows.most_common()),
        "faults": faults,
        "stale_checks": tally.stale_checks,
        "stale_reads": len(tally.stale_reads),
        "stale_examples": tally.stale_reads[:10],
        "stuck_in_checking": stuck,
        "grace_waited_seconds": waited,
        "rss_web_kib": {"first": web[0], "last": web[-1], "max": max(web)} if web else {},
        "rss_worker_kib": {
            str(run): {"first": values[0], "last": values[-1], "max": max(values)}
            for run, values in worker_runs.items()
        },
        "loadavg_1m": {
            "min": round(min(load), 2),
            "mean": round(sum(load) / len(load), 2),
            "max": round(max(load), 2),
        }
        if load
        else {},
        "rss_samples": rss,
        "logs": str(logs),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"soak-{datetime.now(UTC):%Y%m%d-%H%M}.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    summary = {k: v for k, v in report.items() if k != "rss_samples"}
    print(json.dumps(summary, indent=2))
    print(f"written to {out}", file=sys.stderr)
    return 0 if report["stale_reads"] == 0 and stuck == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
