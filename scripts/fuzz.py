"""Schemathesis against a live server (issue 11): gunicorn on the configured database and
Redis (DATABASE_URL / REDIS_URL; SQLite and no Redis otherwise), the demo tenant loaded,
one agent key and one reviewer key, a Celery worker. Before the run, fixtures are created
through the API (scripts/fuzz_seed.py: memories in several states, an approval, a task that
used memory, a re-validation) and the id path parameters are drawn from them
(scripts/fuzz_hooks.py), so id endpoints are exercised beyond 404. Checks: no server
error, responses and status codes as the OpenAPI schema declares.

    .venv/bin/python scripts/fuzz.py            # bounded: FUZZ_EXAMPLES=20 (CI, ~2 min)
    make fuzz                                   # longer: FUZZ_EXAMPLES=300
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHECKS = "not_a_server_error,response_schema_conformance,status_code_conformance"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(  # noqa: S603 - the project's own manage.py
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip().splitlines()[-1].strip() if done.stdout.strip() else ""


def _wait(url: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2):  # noqa: S310 - our loopback server
                return
        except OSError:
            time.sleep(0.3)
    raise SystemExit(f"the server did not answer {url}")


def main() -> int:
    var = ROOT / "var" / "fuzz"
    var.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "SECRET_KEY": os.environ.get("SECRET_KEY", "fuzz-only-secret"),
        "EMAIL_URL": os.environ.get("EMAIL_URL", "dummy://"),  # DEBUG off needs one
        "MEMGOV_VAR_DIR": str(var),
        "MEMGOV_THROTTLE_RATE": "1000000/min",
        "DJANGO_SETTINGS_MODULE": "config.settings",
    }
    _manage(env, "migrate", "--no-input")
    _manage(env, "load_demo")
    keys = {
        "agent": _manage(env, "create_api_key", "--tenant", "demo", "--agent", "fuzzer"),
        "reviewer": _manage(env, "create_api_key", "--tenant", "demo", "--user", "rita"),
    }
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(  # noqa: S603 - the project's own server
        [sys.executable, "-m", "gunicorn", "config.wsgi:application", "--workers=2",
         f"--bind=127.0.0.1:{port}", "--log-level=warning"],
        cwd=ROOT,
        env=env,
    )  # fmt: skip
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--concurrency", "1",
         "--loglevel", "WARNING"],
        cwd=ROOT,
        env=env,
    )  # fmt: skip
    failed = False
    try:
        _wait(f"{base}/healthz")
        fixtures = var / "fixtures.json"
        subprocess.run(  # noqa: S603 - the fixtures, through the API
            [sys.executable, "-m", "scripts.fuzz_seed", base, keys["agent"], keys["reviewer"],
             str(fixtures)],
            cwd=ROOT,
            env=env,
            check=True,
        )  # fmt: skip
        env["FUZZ_FIXTURES"] = str(fixtures)
        env["SCHEMATHESIS_HOOKS"] = "scripts.fuzz_hooks"
        examples = os.environ.get("FUZZ_EXAMPLES", "20")
        # The two keys' runs at once, each its own process (one thread each: with two
        # threads, Hypothesis's ast.parse of a strategy's lambda hit CPython 3.11's "AST
        # constructor recursion depth mismatch"); their output follows each other's.
        runs = {}
        for who, key in keys.items():
            log = (var / f"schemathesis-{who}.log").open("w+")
            runs[who] = (log, subprocess.Popen(  # noqa: S603 - schemathesis from this venv
                [str(Path(sys.executable).parent / "schemathesis"), "run",
                 f"{base}/api/schema/?format=json", "--url", base,
                 "--checks", CHECKS, "--max-examples", examples,
                 "--header", f"Authorization: Bearer {key}", "--workers", "1",
                 "--generation-deterministic", "--phases", "examples,coverage,fuzzing"],
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            ))  # fmt: skip
        for who, (log, run) in runs.items():
            failed |= run.wait() != 0
            log.seek(0)
            print(f"--- schemathesis as the {who}\n{log.read()}", flush=True)
            log.close()
    finally:
        for proc in (server, worker):
            proc.terminate()
        for proc in (server, worker):
            proc.wait(timeout=60)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
