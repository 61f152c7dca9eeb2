"""Issue 36, point 7: a real PgBouncer in transaction mode, one server connection shared by
every client, in front of the test database and gunicorn as deployed. With
``MEMGOV_DB_POOL_MODE=transaction`` concurrent resolves all answer; with prepared
statements left on they fail (what the review saw); and asking for both is refused
before the process starts."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.conf import settings

from tests.conftest import World, needs
from tests.deploy.live import Gunicorn, free_port, wait_for
from tests.deploy.support import ROOT
from tests.integration.test_workflow_worker import _test_database_url

pytestmark = [needs("postgres"), needs("redis"), pytest.mark.django_db(transaction=True)]


@pytest.fixture
def pgbouncer() -> Iterator[str]:
    """PgBouncer (transaction mode, one server connection) on a free port; its URL."""
    binary = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
    if not Path(binary).exists():
        if os.environ.get("CI") == "true":
            raise AssertionError("pgbouncer is needed (apt-get install pgbouncer)")
        pytest.skip("no pgbouncer here")
    target = urlsplit(_test_database_url())
    name, port = target.path.strip("/"), free_port()
    # Its own folder under /tmp: as root it runs as postgres, who cannot enter pytest's.
    folder = Path(tempfile.mkdtemp(prefix="memgov-pgbouncer-"))
    (folder / "users.txt").write_text(f'"{target.username}" ""\n')
    (folder / "pgbouncer.ini").write_text(
        f"[databases]\n{name} = host={target.hostname} port={target.port or 5432} "
        f"dbname={name}\n"
        f"[pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {port}\n"
        f"auth_type = trust\nauth_file = {folder / 'users.txt'}\n"
        "pool_mode = transaction\ndefault_pool_size = 1\nmax_client_conn = 200\n"
        "unix_socket_dir =\n"
    )
    folder.chmod(0o755)
    for path in folder.iterdir():
        path.chmod(0o644)
    as_user = ["-u", "postgres"] if os.geteuid() == 0 else []  # it refuses to run as root
    process = subprocess.Popen([binary, *as_user, str(folder / "pgbouncer.ini")])  # noqa: S603
    url = target._replace(netloc=f"{target.username}@127.0.0.1:{port}").geturl()
    try:
        wait_for("pgbouncer to listen", lambda: _listens(port), timeout=20)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)
        shutil.rmtree(folder, ignore_errors=True)


def _listens(port: int) -> bool:
    import socket

    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _resolves(web: Gunicorn, key: str, subject: str, threads: int, each: int) -> list[int]:
    statuses: list[int] = []

    def call() -> None:
        for _ in range(each):
            request = urllib.request.Request(  # noqa: S310 - loopback
                f"{web.base}/api/v1/resolve",
                data=json.dumps({"subject": subject}).encode(),
                headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
            )
            try:
                with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310
                    statuses.append(answer.status)
            except urllib.error.HTTPError as error:
                statuses.append(error.code)

    workers = [threading.Thread(target=call) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
    return statuses


def _entity(web: Gunicorn, key: str) -> str:
    request = urllib.request.Request(  # noqa: S310 - loopback
        f"{web.base}/api/v1/entities",
        data=json.dumps({"kind": "customer", "name": "Dana Kim"}).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310
        return str(json.loads(answer.read())["id"])


def _web(tmp_path: Path, url: str, **env: str) -> Gunicorn:
    return Gunicorn(
        tmp_path / f"web-{len(list(tmp_path.iterdir()))}.log",
        {
            "DATABASE_URL": url,
            "REDIS_URL": str(settings.REDIS_URL),
            "CACHE_URL": str(settings.CACHE_URL),
            "CELERY_BROKER_URL": str(settings.CELERY_BROKER_URL),
            "MEMGOV_RESOLVE_CACHE": "false",  # every resolve runs its statements
            **env,
        },
        "--workers=1",
        "--threads=4",
    )


def test_resolves_work_behind_a_transaction_mode_pgbouncer(world: World, pgbouncer, tmp_path):
    agent = world.keys["agent"]
    with _web(tmp_path, pgbouncer, MEMGOV_DB_POOL_MODE="transaction") as web:
        statuses = _resolves(web, agent, _entity(web, agent), threads=4, each=15)

    assert statuses == [200] * 60, web.output()[-3000:]


def test_prepared_statements_break_behind_it_which_is_why_the_setting_exists(
    world: World, pgbouncer, tmp_path
):
    agent = world.keys["agent"]
    with _web(tmp_path, pgbouncer, MEMGOV_DB_PREPARED_STATEMENTS="true") as web:
        statuses = _resolves(web, agent, _entity(web, agent), threads=4, each=15)

    assert 500 in statuses


def test_asking_for_prepared_statements_behind_a_transaction_pooler_is_refused_at_start():
    started = subprocess.run(
        [sys.executable, "-c", "from django.conf import settings; settings.DATABASES"],
        cwd=ROOT,
        env={
            **os.environ,
            "DATABASE_URL": "postgres://postgres@127.0.0.1:6432/memgov",
            "MEMGOV_DB_POOL_MODE": "transaction",
            "MEMGOV_DB_PREPARED_STATEMENTS": "true",
        },
        capture_output=True,
        text=True,
    )

    assert started.returncode != 0
    assert "cannot work behind a transaction-mode pooler" in started.stderr
