"""``make run``: migrate, load the demo tenant, start the web server (the site, the API and
the MCP server at ``/mcp``), a Celery worker and beat, and the webhook deliveries' worker
on the embedded broker (or on REDIS_URL); once the site answers and both workers are ready,
print how to log in; Ctrl-C stops all.

The terminal stays readable: what the processes write (Celery's banners, warnings, one
access-log line per request) goes to ``var/log/run.log``, the previous run's to
``run.log.1``. The terminal shows two lines of progress, then the banner (URL, logins,
keys) last, and after it only errors (a record logged at ERROR or above, a traceback, the
last lines of a process that stopped)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
VAR = Path(os.environ.get("MEMGOV_VAR_DIR") or ROOT / "var")  # as config/settings.py reads it
MAIL_DIR = VAR / "mail"
LOG = VAR / "log" / "run.log"
READY_DIR = VAR / "run"  # a Celery worker of make run touches <name>.ready here when ready
# How long the web server and the workers may take to come up (a loaded machine, a cold disk).
STARTUP_SECONDS = 180

# The first line of a log record, in the formats the processes write: Django's plain and
# JSON lines (operations/logs.py), gunicorn's and Celery's "[date ...]", an access-log line, a
# Python warning. Other lines (a traceback's, Celery's banner) continue the record above.
_RECORD = re.compile(
    r"^(?:\d{4}-\d\d-\d\d[ T]\d\d:\d\d|\[\d{4}-\d\d-\d\d|\{\"|\S+ - \S+ \[|\S+\.py:\d+: \w+Warning)"
)
# The level of a plain record: Django's "date time LEVEL", Celery's "[date: LEVEL/process]",
# gunicorn's "[date] [pid] [LEVEL]".
_ERROR = re.compile(r"^(?:\S+ \S+ |\[[^\]]*: |\[[^\]]*\] \[\d+\] \[)(?:ERROR|CRITICAL)\b")


def _is_error(record_line: str) -> bool:
    """An error record: logged at ERROR or CRITICAL. A request line is never one, whatever
    its path: a server error logs a record of its own."""
    if record_line.startswith("{"):
        try:
            return json.loads(record_line).get("level") in ("ERROR", "CRITICAL")
        except (ValueError, AttributeError):
            return False
    return bool(_ERROR.match(record_line))


class Output:
    """The processes' output: every line into the log file, prefixed with the process's
    name; the lines of an error record (and of a traceback) to the terminal as well."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            path.replace(path.with_name(path.name + ".1"))
        self.path = path
        self._file = path.open("a", encoding="utf-8", errors="replace", buffering=1)
        self._lock = threading.Lock()
        self.tails: dict[str, deque[tuple[str, bool]]] = {}  # last lines, and whether shown

    def write(self, name: str, text: str) -> None:
        with self._lock:
            for line in text.splitlines():
                self._file.write(f"{name:<8} | {line}\n")

    def follow(self, name: str, stream: IO[str]) -> threading.Thread:
        tail = self.tails.setdefault(name, deque(maxlen=25))

        def read() -> None:
            shown = False
            for line in stream:
                self.write(name, line)
                if line.startswith("Traceback"):
                    shown = True
                elif _RECORD.match(line):
                    shown = _is_error(line)
                tail.append((line.rstrip("\n"), shown))
                if shown:
                    print(f"[{name}] {line}", end="", file=sys.stderr, flush=True)

        thread = threading.Thread(target=read, name=f"output-{name}", daemon=True)
        thread.start()
        return thread


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("DEBUG", "1")  # a local demo: no SECRET_KEY needed, plain-HTTP cookies
    # Warnings and errors of the application; gunicorn's access log records each request.
    env.setdefault("LOG_LEVEL", "WARNING")
    env.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    port = env.setdefault("MEMGOV_PORT", "8000")
    env.setdefault("SITE_URL", f"http://127.0.0.1:{port}")
    # Emails land as files a mail client opens, not as log lines.
    env.setdefault("EMAIL_URL", MAIL_DIR.as_uri())
    env["PYTHONUNBUFFERED"] = "1"  # lines reach the log file in the order they happened
    return env


def _shown(path: Path) -> str:
    """A path as the person at the terminal would type it from the checkout."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def _start_preparing(env: dict[str, str]) -> subprocess.Popen[str]:
    """Migrate and load the demo in one process (one Django start instead of two), while
    the servers start: they touch the database only once asked, after it is done."""
    return subprocess.Popen(
        [sys.executable, "-m", "scripts.run", "--prepare"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _prepared(preparing: subprocess.Popen[str], output: Output) -> str:
    """The demo's logins and keys, as load_demo printed them, once it is done."""
    demo, errors = preparing.communicate()
    output.write("setup", errors)
    if preparing.returncode:
        print(errors, end="", file=sys.stderr)
        raise SystemExit(f"Setting up the demo failed (exit status {preparing.returncode}).")
    return demo


def _prepare_here() -> None:
    """``--prepare``: what _start_preparing runs, in the child."""
    import django  # noqa: PLC0415 - the child alone loads Django, not make run's own process
    from django.conf import settings  # noqa: PLC0415
    from django.core.management import call_command  # noqa: PLC0415

    django.setup()
    call_command("migrate", interactive=False, verbosity=0, stdout=sys.stderr)
    # No collectstatic (18 MB copied and gzipped): whitenoise serves each file from the app
    # that holds it (WHITENOISE_USE_FINDERS); an empty STATIC_ROOT keeps it from warning.
    Path(settings.STATIC_ROOT).mkdir(parents=True, exist_ok=True)
    call_command("load_demo")  # its logins and keys on stdout: the banner prints them


def _celery_worker_here(ready: Path, argv: list[str]) -> None:
    """``--celery-worker READY ARGS…``: ``celery ARGS…`` that touches READY once the worker
    consumes, so the banner waits for the workers too."""
    from celery import signals  # noqa: PLC0415 - only the workers' processes need Celery
    from celery.__main__ import main as celery_main  # noqa: PLC0415

    def touch(**_: object) -> None:
        ready.touch()

    signals.worker_ready.connect(touch, weak=False)
    sys.argv = ["celery", *argv]
    celery_main()


def _celery(name: str, *argv: str) -> tuple[str, list[str], Path]:
    ready = READY_DIR / f"{name}.ready"
    command = [sys.executable, "-m", "scripts.run", "--celery-worker", str(ready), *argv]
    return name, command, ready


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2):  # noqa: S310 - our own loopback server
            return True
    except urllib.error.HTTPError as error:
        return error.code < 500  # it answers (a 4xx is an answer)
    except OSError:
        return False


def _stopped(processes: dict[str, subprocess.Popen[str]], output: Output) -> bool:
    """True, with the last lines of the process, when one of them has exited."""
    for name, process in processes.items():
        if process.poll() is not None:
            time.sleep(0.5)  # its last lines reach the log
            unseen = [line for line, shown in output.tails.get(name, ()) if not shown]
            print(
                f"\nThe {name} process stopped (exit status {process.returncode})"
                + (":\n" + "\n".join(unseen) if unseen else ".")
                + f"\nAll of its output: {_shown(output.path)}",
                file=sys.stderr,
                flush=True,
            )
            return True
    return False


def main() -> int:
    signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C, even if inherited ignored
    env = _env()
    port = env["MEMGOV_PORT"]
    url = f"http://127.0.0.1:{port}"
    VAR.mkdir(parents=True, exist_ok=True)
    READY_DIR.mkdir(parents=True, exist_ok=True)
    output = Output(LOG)
    print("Preparing the database and the demo tenant…", flush=True)
    preparing = _start_preparing(env)
    print(
        "Starting the web server, the Celery workers and beat "
        f"(their output goes to {_shown(LOG)})…",
        flush=True,
    )
    web = (
        "web",
        [
            str(BIN / "gunicorn"),
            "config.wsgi:application",  # the site, the API and the MCP server at /mcp
            *("-c", "deploy/gunicorn.conf.py"),  # as deployed, on fewer processes:
            # one, whose MEMGOV_WEB_THREADS (8) answer a demo; a second would be one more
            # Django to start on two cores before the banner.
            *("--bind", f"127.0.0.1:{port}", "--workers", "1"),
            *("--access-logfile", "-", "--log-level", "warning"),
        ],
        None,
    )
    worker = _celery(
        "worker",
        *("-A", "config", "worker", "-Q", "celery", "--beat"),
        *("--loglevel", "warning", "--concurrency", "2"),
        *("--schedule", str(VAR / "celerybeat-schedule")),
    )
    # Webhook deliveries on their own queue, as deployed: a slow receiver never holds the
    # worker above.
    webhooks = _celery(
        "webhooks",
        *("-A", "config", "worker", "-Q", "webhooks", "-n", "webhooks@%h"),
        *("--loglevel", "warning", "--concurrency", "1"),
    )
    ready_files = [ready for _, _, ready in (worker, webhooks)]
    for ready in ready_files:
        ready.unlink(missing_ok=True)
    processes: dict[str, subprocess.Popen[str]] = {}

    def stop(*_: object) -> None:
        """SIGTERM to each (a graceful stop: gunicorn's and Celery's), then SIGKILL to what
        is left of its process group: a web worker whose master has gone would otherwise
        keep the port."""
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C again: stopping already
        # The setup ends on its own (Ctrl-C reaches it, in run.py's group); after SIGTERM
        # to run.py alone it may finish: load_demo stopped halfway would stay half done.
        with contextlib.suppress(subprocess.TimeoutExpired):
            preparing.wait(timeout=60)
        if preparing.poll() is None:
            preparing.kill()
        for process in processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 20
        for process in processes.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()

    def stop_and_exit(*_: object) -> None:
        stop()
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop_and_exit)
    signal.signal(signal.SIGHUP, stop_and_exit)  # the terminal closed: its group is ours alone
    try:
        for name, command, _ in (web, worker, webhooks):
            process = subprocess.Popen(  # noqa: S603 - fixed command lines
                command,
                cwd=ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                errors="replace",
                process_group=0,  # its own group: Ctrl-C reaches run.py, which stops it
            )
            processes[name] = process
            if process.stdout:  # always: stdout=PIPE
                output.follow(name, process.stdout)
        demo = _prepared(preparing, output)  # before the site is asked anything
        deadline = time.monotonic() + STARTUP_SECONDS
        while not (
            all(ready.exists() for ready in ready_files) and _answers(f"{url}/accounts/login/")
        ):
            if _stopped(processes, output):
                return 1
            if time.monotonic() > deadline:
                print(
                    f"Not up after {STARTUP_SECONDS} s; see {_shown(LOG)}.",
                    file=sys.stderr,
                    flush=True,
                )
                return 1
            time.sleep(0.25)

        banner = [
            "",
            f"Memgov is running at {url}/  (API docs: {url}/api/docs/)",
            f"MCP server (streamable HTTP): {url}/mcp  (README, MCP)",
            "",
            demo.rstrip("\n"),
            "",
        ]
        if env["EMAIL_URL"].startswith("file:"):
            banner.append(f"Emails are written to {_shown(MAIL_DIR)}/ (one .eml per message).")
        banner += [
            f"Logs (warnings, Celery, one line per request): {_shown(LOG)}",
            "Press Ctrl-C to stop the web server, the workers and beat.",
        ]
        print("\n".join(banner), flush=True)

        while not _stopped(processes, output):
            time.sleep(0.5)
        print("Shutting the others down.", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        stop()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--prepare"]:
        _prepare_here()
    elif sys.argv[1:2] == ["--celery-worker"]:
        _celery_worker_here(Path(sys.argv[2]), sys.argv[3:])
    else:
        try:
            sys.exit(main())
        except KeyboardInterrupt:  # Ctrl-C while setting up: nothing runs yet
            sys.exit(0)
