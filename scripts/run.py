"""``make run``: migrate, load the demo tenant, start the web server (the site, the API and
the MCP server at ``/mcp``), a Celery worker and beat, and the webhook deliveries' worker
on the embedded broker (or on REDIS_URL), print how to log in; Ctrl-C stops all."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
MAIL_DIR = Path(os.environ.get("MEMGOV_VAR_DIR", ROOT / "var")) / "mail"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("DEBUG", "1")  # a local demo: no SECRET_KEY needed, plain-HTTP cookies
    env.setdefault("LOG_LEVEL", "WARNING")  # no line per request in the demo's terminal
    env.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    port = env.setdefault("MEMGOV_PORT", "8000")
    env.setdefault("SITE_URL", f"http://127.0.0.1:{port}")
    # Emails land as files a mail client opens, not as log lines in this terminal.
    env.setdefault("EMAIL_URL", MAIL_DIR.as_uri())
    return env


def _manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(  # noqa: S603 - our own manage.py with fixed arguments
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout


def main() -> int:
    env = _env()
    (ROOT / "var").mkdir(exist_ok=True)
    print("Migrating the database…", flush=True)
    _manage(env, "migrate", "--no-input", "-v0")
    _manage(env, "collectstatic", "--no-input", "-v0")
    demo = _manage(env, "load_demo")
    port = env["MEMGOV_PORT"]
    processes = [
        subprocess.Popen(  # noqa: S603 - fixed command line
            [
                str(BIN / "gunicorn"),
                "config.wsgi:application",  # the site, the API and the MCP server at /mcp
                *("-c", "deploy/gunicorn.conf.py"),  # as deployed, on fewer processes
                *("--bind", f"127.0.0.1:{port}", "--workers", "2"),
                *("--access-logfile", "-", "--log-level", "warning"),
            ],
            cwd=ROOT,
            env=env,
        ),
        subprocess.Popen(  # noqa: S603 - fixed command line
            [
                str(BIN / "celery"),
                "-A",
                "config",
                "worker",
                "-Q",
                "celery",
                "--beat",
                "--loglevel",
                "warning",
                "--concurrency",
                "2",
                "--schedule",
                str(ROOT / "var" / "celerybeat-schedule"),
            ],
            cwd=ROOT,
            env=env,
        ),
        # Webhook deliveries on their own queue, as deployed: a slow receiver never
        # holds the worker above.
        subprocess.Popen(  # noqa: S603 - fixed command line
            [
                str(BIN / "celery"),
                *("-A", "config", "worker", "-Q", "webhooks", "-n", "webhooks@%h"),
                *("--loglevel", "warning", "--concurrency", "1"),
            ],
            cwd=ROOT,
            env=env,
        ),
    ]
    time.sleep(2)
    print(f"\nMemgov is running at http://127.0.0.1:{port}/  (API docs: /api/docs/)")
    print(f"MCP server (streamable HTTP): http://127.0.0.1:{port}/mcp  (README, MCP)\n")
    print(demo, flush=True)
    if env["EMAIL_URL"].startswith("file:"):
        print(f"Emails are written to {MAIL_DIR}/ (one .eml per message).\n", flush=True)
    print("Press Ctrl-C to stop the web server, the workers and beat.", flush=True)

    def stop(*_: object) -> None:
        for process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()

    def stop_and_exit(*_: object) -> None:
        stop()
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop_and_exit)
    try:
        while all(p.poll() is None for p in processes):
            time.sleep(0.5)
        print("A process stopped; shutting the others down.", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        stop()


if __name__ == "__main__":
    sys.exit(main())
