"""Issue 43, point 16: the first ``make run``. It installs what the demo needs (the test
tools come with ``make test``), prints its banner last, once the site answers and both
Celery workers are ready, and keeps the terminal quiet: Celery's banners, warnings and
the access log go to ``var/log/run.log``, the terminal shows the banner and errors only.

How long a fresh clone's first ``make run`` takes is measured, not tested (bench/README.md)."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import tomllib
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from scripts import run
from tests.deploy.support import ROOT

ACCESS_LINE = re.compile(r'"(?:GET|POST|PUT|PATCH|DELETE) /\S* HTTP/1\.[01]" \d{3}')
BANNER_END = "Press Ctrl-C to stop the web server, the workers and beat."
# What the old make run scrolled the banner away with: Celery's banner, its warnings.
CELERY_BANNER = ("[queues]", "-------------- celery@", "-------------- webhooks@", ".> transport:")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _make_n(target: str, venv: Path) -> str:
    """What ``make TARGET`` would run where no virtualenv exists yet (VENV names one that
    does not), with that path written as ``$VENV``."""
    if not shutil.which("make"):
        pytest.skip("needs make")
    done = subprocess.run(  # noqa: S603 - the project's own Makefile, printed, not run
        ["make", "-n", target, f"VENV={venv}"],  # noqa: S607
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.replace(str(venv), "$VENV")


def _dev_only_packages() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))

    def names(requirements: list[str]) -> set[str]:
        return {re.split(r"[\[<>=!~; ]", r, maxsplit=1)[0].lower() for r in requirements}

    runtime = names(project["project"]["dependencies"])
    return names(project["dependency-groups"]["dev"]) - runtime


def test_make_run_installs_no_development_tool(tmp_path: Path) -> None:
    """On a fresh tree (no virtualenv yet) ``make run`` installs the project and its client,
    never the dev group; ``make test`` adds the group after them."""
    venv = tmp_path / "venv"
    dev_only = _dev_only_packages()
    assert {"playwright", "mypy", "schemathesis", "pytest"} <= dev_only

    for target in ("run", "prod"):
        commands = _make_n(target, venv)
        assert "--group" not in commands, commands
        assert "pip install --quiet -e . -e ./clients/python" in commands, commands
        named = {name for name in dev_only if re.search(rf"\b{re.escape(name)}\b", commands)}
        assert not named, named

    for target in ("test", "lint", "fuzz", "bench"):
        commands = _make_n(target, venv)
        assert "--group dev" in commands, target
        assert commands.index("-e . -e ./clients/python") < commands.index("--group dev")


def test_error_records_and_tracebacks_reach_the_terminal_and_the_rest_only_the_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = run.Output(tmp_path / "log" / "run.log")
    lines = [
        "2026-12-05 12:16:35,911 WARNING kombu.connection [-] No hostname was supplied.",
        " -------------- celery@vm v5.7.0 (collider)",
        '127.0.0.1 - - [05/Dec/2026:12:16:36 +0000] "GET /ERROR HTTP/1.1" 404 0 "-" "curl"',
        "2026-12-05 12:16:37,001 ERROR django.request [abc] Internal Server Error: /x",
        "Traceback (most recent call last):",
        '  File "x.py", line 1, in <module>',
        "ZeroDivisionError: division by zero",
        "[2026-12-05 12:16:38,002: INFO/MainProcess] Task t[1] received",
        "[2026-12-05 12:16:39 +0000] [42] [ERROR] Connection in use: ('127.0.0.1', 8000)",
        '{"ts":"2026-12-05T12:16:40.000+00:00","level":"CRITICAL","logger":"x","message":"m"}',
        '{"ts":"2026-12-05T12:16:41.000+00:00","level":"INFO","logger":"x","message":"ERROR"}',
    ]
    output.follow("web", io.StringIO("\n".join(lines) + "\n")).join(timeout=5)

    shown = capsys.readouterr().err.splitlines()
    assert shown == [f"[web] {line}" for line in lines[3:7] + lines[8:10]]
    logged = (tmp_path / "log" / "run.log").read_text().splitlines()
    assert logged == [f"web      | {line}" for line in lines]


def _call(base: str, key: str, method: str, path: str, body: Any = None) -> Any:
    request = urllib.request.Request(  # noqa: S310 - make run's own loopback server
        f"{base}/api/v1{path}",
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    # An upper bound for a loaded machine (the suite's other servers beside it), no claim.
    with urllib.request.urlopen(request, timeout=60) as answer:  # noqa: S310
        return json.loads(answer.read())


@pytest.mark.worker
def test_make_run_prints_its_banner_last_and_keeps_the_terminal_quiet(tmp_path: Path) -> None:
    """``scripts/run.py`` (``make run``'s command) in its own var directory on a free port,
    on SQLite and the embedded broker: the terminal ends with the banner naming the chosen
    port, the demo's loop runs through the real worker, and the terminal never shows an
    access-log line, a Celery banner or a warning; the log file holds them."""
    port = _free_port()
    var = tmp_path / "var"
    env = {
        name: value
        for name, value in os.environ.items()
        if name
        not in {
            *("DATABASE_URL", "REDIS_URL", "CACHE_URL", "CELERY_BROKER_URL", "EMAIL_URL"),
            *("DEBUG", "LOG_LEVEL", "MEMGOV_LOG_FORMAT", "SITE_URL", "PROMETHEUS_MULTIPROC_DIR"),
        }
    }
    env |= {"MEMGOV_VAR_DIR": str(var), "MEMGOV_PORT": str(port), "MEMGOV_PROBE_PORT": "0"}
    process = subprocess.Popen(  # make run's command, as the Makefile runs it
        [sys.executable, "scripts/run.py"],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # Ctrl-C reaches its process group, as at a terminal
    )
    terminal: list[str] = []
    assert process.stdout is not None
    reader = threading.Thread(target=lambda: terminal.extend(process.stdout or ()), daemon=True)
    reader.start()
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 240
        while not any(BANNER_END in line for line in terminal):
            assert process.poll() is None, "".join(terminal)
            assert time.monotonic() < deadline, "".join(terminal)
            time.sleep(0.2)

        # Up when it says so: the site answers at once, and the worker runs the loop.
        with urllib.request.urlopen(f"{base}/accounts/login/", timeout=5) as page:  # noqa: S310
            assert page.status == 200
            styles = re.findall(r'/static/[^"]+\.css', page.read().decode())
        # Static files without collectstatic: the site's own and the API docs' (sidecar).
        for static in (*styles, "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui.css"):
            with urllib.request.urlopen(f"{base}{static}", timeout=5) as sheet:  # noqa: S310
                assert sheet.status == 200 and sheet.read(), static
        assert styles
        key = (var / "demo-agent-key").read_text().strip()
        rita = (var / "demo-rita-key").read_text().strip()
        source = _call(base, key, "POST", "/sources", {
            "kind": "business_record", "content": "Order order-b: deliver to 9 Pier St",
            "external_ref": "ORD-B",
        })["id"]  # fmt: skip
        dana = _call(base, key, "POST", "/entities/match", {"name": "Dana Kim", "kind": "customer"})
        memory = _call(base, key, "POST", "/memories", {
            "kind": "task_fact", "subject": dana["candidates"][0]["id"],
            "field": "delivery_address", "value": "9 Pier St",
            "statement": "Order order-b goes to 9 Pier St.", "scope": {"task": "order-b"},
            "owner": "sam", "expires_at": "2030-01-01T00:00:00Z", "sources": [source],
        })["id"]  # fmt: skip
        _call(base, rita, "POST", f"/memories/{memory}/approve", {"comment": "ORD-B says so"})
        status = "checking"
        for _ in range(120):
            status = _call(base, key, "GET", f"/memories/{memory}")["status"]
            if status != "checking":
                break
            time.sleep(0.5)
        assert status == "active"
        time.sleep(1)  # anything the processes still had to say
        printed_before_stop = len(terminal)

        os.killpg(process.pid, signal.SIGINT)  # Ctrl-C
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    reader.join(timeout=5)
    shown = "".join(terminal)
    with socket.socket() as again:  # nothing it started still holds the port
        again.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        again.bind(("127.0.0.1", port))

    # The banner is the last thing printed, and Ctrl-C adds nothing after it.
    assert len(terminal) == printed_before_stop, shown
    assert shown.rstrip("\n").endswith(BANNER_END), shown
    banner = shown[shown.index("Memgov is running at") :]
    assert f"Memgov is running at {base}/" in banner
    assert f"MCP server (streamable HTTP): {base}/mcp" in banner
    for login in ("rita  rita-demo-pass", "omar  omar-demo-pass", "Agent API key"):
        assert login in banner
    assert key in banner and rita in banner
    assert "var/log/run.log" in banner
    # Before it, only the two progress lines.
    assert shown[: shown.index("Memgov is running at")].strip().splitlines() == [
        "Preparing the database and the demo tenant…",
        "Starting the web server, the Celery workers and beat "
        f"(their output goes to {var / 'log' / 'run.log'})…",
    ]
    # Quiet: no request line, no Celery banner, no warning, no shutdown chatter.
    assert not ACCESS_LINE.search(shown), shown
    for noise in (*CELERY_BANNER, "kombu", "WARNING", "Warning", "Warm shutdown"):
        assert noise not in shown, noise

    # The log file holds them, each line named by its process.
    log = (var / "log" / "run.log").read_text()
    assert re.search(rf"^web +\| .*{ACCESS_LINE.pattern}", log, re.M)
    assert f'"POST /api/v1/memories/{memory}/approve HTTP/1.1" 200' in log
    for banner_line in CELERY_BANNER:
        assert banner_line in log, banner_line
    assert re.search(r"^(worker|webhooks) +\| .*WARNING", log, re.M)  # kombu's, today
    assert re.search(r"^worker +\| .*Warm shutdown", log, re.M)
