"""Install Memgov as the image does (the hash-checked versions of
requirements/runtime.lock, then ``pip install --no-deps .``: the runtime dependencies
only, no dev group) into a fresh virtualenv, then run ``manage.py check --deploy``,
migrate, serve the production web role (gunicorn with ``deploy/gunicorn.conf.py``) and
answer one API request with a key. A dependency imported at run time but named only in
the dev group, or missing from the lockfile, fails here, not in production.

    DATABASE_URL=postgres://… REDIS_URL=redis://…/0 CACHE_URL=redis://…/1 \
        python3 scripts/check_runtime_install.py

``.ci/run`` runs it on its own database. Exit status 0 when everything answered."""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _run(command: list[str], env: dict[str, str]) -> str:
    print("+", " ".join(command), flush=True)
    done = subprocess.run(  # noqa: S603 - our own commands
        command, cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    if command[-1] == "--deploy":  # its warnings, if any, go to stderr
        print(done.stderr, end="", flush=True)
    return done.stdout


def _get(url: str, key: str = "") -> tuple[int, bytes]:
    request = urllib.request.Request(url)  # noqa: S310 - our own loopback server
    if key:
        request.add_header("Authorization", f"Bearer {key}")
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
        return int(response.status), bytes(response.read())


def main() -> None:
    if not all(os.environ.get(name) for name in ("DATABASE_URL", "REDIS_URL", "CACHE_URL")):
        sys.exit("set DATABASE_URL, REDIS_URL and CACHE_URL (the cache on another database)")
    with tempfile.TemporaryDirectory(prefix="memgov-runtime-") as scratch:
        venv = Path(scratch) / "venv"
        python = str(venv / "bin" / "python")
        env = {
            "PATH": f"{venv / 'bin'}:{os.environ.get('PATH', '')}",
            "HOME": os.environ.get("HOME", scratch),
            "DATABASE_URL": os.environ["DATABASE_URL"],
            "REDIS_URL": os.environ["REDIS_URL"],
            "CACHE_URL": os.environ["CACHE_URL"],
            "SECRET_KEY": secrets.token_urlsafe(50),
            "DEBUG": "false",
            "ALLOWED_HOSTS": "127.0.0.1",
            "EMAIL_URL": "dummy://",
            "MEMGOV_VAR_DIR": scratch,
            "MEMGOV_STATIC_ROOT": str(Path(scratch) / "static"),
            "DJANGO_SETTINGS_MODULE": "config.settings",
        }
        _run([sys.executable, "-m", "venv", str(venv)], env)
        _run([python, "-m", "pip", "install", "--quiet", "pip>=25.1"], env)
        # As deploy/Dockerfile: the locked versions, hash-checked, then the project alone.
        lock = ["-r", "requirements/runtime.lock"]
        _run([python, "-m", "pip", "install", "--quiet", "--require-hashes", *lock], env)
        _run([python, "-m", "pip", "install", "--quiet", "--no-deps", "."], env)
        print(_run([python, "manage.py", "check", "--deploy"], env), end="", flush=True)
        _run([python, "manage.py", "migrate", "--no-input", "-v0"], env)
        _run([python, "manage.py", "collectstatic", "--no-input", "-v0"], env)
        _run([python, "manage.py", "create_tenant", "runtime-check"], env)
        key = _run(
            [
                python,
                "manage.py",
                "create_api_key",
                "--tenant",
                "runtime-check",
                "--agent",
                "probe",
            ],
            env,
        ).split()[-1]
        port = _free_port()
        log = Path(scratch) / "gunicorn.log"
        with log.open("wb") as output:
            server = subprocess.Popen(  # noqa: S603 - the production web role, as deployed
                [
                    python,
                    "-m",
                    "gunicorn",
                    "config.wsgi:application",
                    "-c",
                    "deploy/gunicorn.conf.py",
                ],
                cwd=ROOT,
                env={**env, "GUNICORN_BIND": f"127.0.0.1:{port}", "GUNICORN_WORKERS": "1"},
                stdout=output,
                stderr=subprocess.STDOUT,
            )
        try:
            _answer_one_request(f"http://127.0.0.1:{port}", key, server, log)
        finally:
            server.terminate()
            server.wait(timeout=30)
    print("runtime install: check --deploy, migrate and one API request passed")


def _answer_one_request(base: str, key: str, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 90
    while True:
        if server.poll() is not None:
            sys.exit(f"gunicorn exited:\n{log.read_text(errors='replace')}")
        try:
            _get(f"{base}/healthz")
            break
        except OSError:
            if time.monotonic() > deadline:
                sys.exit(f"gunicorn did not answer:\n{log.read_text(errors='replace')}")
            time.sleep(0.5)
    status, body = _get(f"{base}/api/v1/memories", key)
    if status != 200 or "results" not in json.loads(body):
        sys.exit(f"GET /api/v1/memories answered {status}: {body[:500]!r}")


if __name__ == "__main__":
    main()
