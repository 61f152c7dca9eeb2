"""The image bakes in the application only, runs as a non-root user and reports its
health; compose starts PostgreSQL and Redis first, migrates once, then the app services.

No Docker engine runs here (``docker`` is only a client), so the files are read as the
engine would read them: the YAML graph, and .dockerignore with Docker's matching rules."""

from __future__ import annotations

import re
import shutil
import subprocess
from typing import Any

import pytest

from tests.deploy.support import (
    DEPLOY,
    ROOT,
    dockerignored,
    env_example,
    env_example_names,
    load_yaml,
)

APP_SERVICES = ("web", "worker", "beat")


@pytest.mark.parametrize(
    "path",
    [
        ".git/HEAD",
        ".venv/bin/python",
        "var/memgov.sqlite3",
        "var/broker/queue/x.msg",
        "deploy/.env",
        "deploy/secret_key.txt",
        "memory/__pycache__/models.cpython-311.pyc",
        ".pytest_cache/v/cache/nodeids",
        ".mypy_cache/3.11/x.json",
        "test-artifacts/trace.zip",
        "demo.sqlite3",
    ],
)
def test_history_local_state_and_secrets_stay_out_of_the_image(path):
    assert dockerignored(path)


@pytest.mark.parametrize(
    "path",
    [
        "manage.py",
        "pyproject.toml",
        "config/settings.py",
        "memory/models.py",
        "templates/base.html",
        "static/memgov.css",
        "deploy/gunicorn.conf.py",
        "deploy/Procfile",
    ],
)
def test_the_application_goes_into_the_image(path):
    assert not dockerignored(path)


def _dockerfile() -> list[str]:
    """Instructions with their continuation lines joined."""
    text = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    joined = re.sub(r"\\\n\s*", " ", text)
    return [line.strip() for line in joined.splitlines() if line.strip() and line[0] != "#"]


def test_the_image_runs_as_a_non_root_user_and_has_a_healthcheck():
    instructions = _dockerfile()
    users = [line.split()[1] for line in instructions if line.startswith("USER ")]
    [healthcheck] = [line for line in instructions if line.startswith("HEALTHCHECK ")]

    assert users and users[-1].split(":")[0] not in ("root", "0")
    assert "8001/healthz" in healthcheck  # the probe port, beside the request threads
    assert instructions[-1].startswith("CMD ")
    assert "gunicorn" in instructions[-1]


def test_static_files_are_collected_at_build_and_no_secret_is_kept():
    instructions = _dockerfile()
    [collect] = [line for line in instructions if "collectstatic" in line]
    env = " ".join(line for line in instructions if line.startswith("ENV "))

    assert collect.startswith("RUN ")
    assert "SECRET_KEY" not in env  # the build-only key lives in that RUN line alone
    assert "MEMGOV_STATIC_ROOT=/app/staticfiles" in env


def _compose() -> Any:
    return load_yaml(DEPLOY / "compose.yaml")


def test_postgresql_and_redis_report_their_health():
    services = _compose()["services"]

    assert services["db"]["healthcheck"]["test"][0] == "CMD-SHELL"
    assert "pg_isready" in services["db"]["healthcheck"]["test"][1]
    assert services["redis"]["healthcheck"]["test"] == ["CMD", "redis-cli", "ping"]


def test_migrations_run_once_after_the_database_and_redis_are_healthy():
    migrate = _compose()["services"]["migrate"]

    assert migrate["command"] == ["python", "manage.py", "migrate", "--no-input"]
    assert migrate["restart"] == "no"
    assert migrate["depends_on"] == {
        "db": {"condition": "service_healthy"},
        "redis": {"condition": "service_healthy"},
    }


@pytest.mark.parametrize("name", APP_SERVICES)
def test_every_app_service_waits_for_healthy_stores_and_a_finished_migration(name):
    service = _compose()["services"][name]

    assert service["depends_on"] == {
        "db": {"condition": "service_healthy"},
        "redis": {"condition": "service_healthy"},
        "migrate": {"condition": "service_completed_successfully"},
    }


def test_web_worker_beat_and_migrate_share_one_image_and_one_environment():
    services = _compose()["services"]
    app = [services[name] for name in (*APP_SERVICES, "migrate")]

    assert len({s["image"] for s in app}) == 1
    assert all(s["build"] == {"context": "..", "dockerfile": "deploy/Dockerfile"} for s in app)
    assert all(s["env_file"] == ["memgov.env"] for s in app)
    assert all(s["read_only"] is True and s["tmpfs"] == ["/tmp"] for s in app)  # noqa: S108
    assert "8001/readyz" in services["web"]["healthcheck"]["test"][-1]  # the probe port
    assert services["beat"].get("deploy", {}).get("replicas", 1) == 1


def test_secrets_come_from_the_env_file_whose_example_is_committed():
    text = (DEPLOY / "compose.yaml").read_text(encoding="utf-8")
    compose = _compose()
    example = env_example()
    referenced = set(re.findall(r"\$\{([A-Z_][A-Z0-9_]*)", text))
    without_default = {name for name in referenced if not re.search(rf"\$\{{{name}:-", text)}

    assert "secrets" not in compose
    assert env_example("memgov.env.example")["SECRET_KEY"] == ""
    assert without_default <= set(example)
    assert not (DEPLOY / "secret_key.txt").exists()
    ignored = (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert {"deploy/.env", "deploy/memgov.env"} <= set(ignored)
    assert dockerignored("deploy/memgov.env")


def test_the_database_password_reaches_app_containers_only_inside_database_url():
    # Issue 36, point 13: deploy/.env holds POSTGRES_PASSWORD; no app container reads it,
    # and only the database URL (which each one needs) carries the password.
    services = _compose()["services"]
    app = {name: services[name] for name in (*APP_SERVICES, "webhooks", "migrate")}
    app_settings = env_example_names("memgov.env.example")

    assert "POSTGRES_PASSWORD" not in app_settings
    assert "POSTGRES_PASSWORD" in env_example()
    for name, service in app.items():
        assert ".env" not in service["env_file"], name
        carrying = {k for k, v in service["environment"].items() if "POSTGRES_PASSWORD" in v}
        assert carrying == {"DATABASE_URL"}, name
    assert services["db"]["environment"]["POSTGRES_PASSWORD"].startswith("${POSTGRES_PASSWORD")
    assert "env_file" not in services["db"]  # and the database none of the app's secrets


def test_docker_compose_config_accepts_the_file_when_the_plugin_is_installed(tmp_path):
    docker = shutil.which("docker")
    if docker is None:
        pytest.skip("no docker client")
    probe = subprocess.run(  # noqa: S603 - asks the client for its version only
        [docker, "compose", "version"], capture_output=True, check=False
    )
    if probe.returncode != 0:
        pytest.skip("docker has no compose plugin here")
    copy = tmp_path / "deploy"
    copy.mkdir()
    shutil.copy(DEPLOY / "compose.yaml", copy / "compose.yaml")
    (copy / ".env").write_text("POSTGRES_PASSWORD=y\n")
    (copy / "memgov.env").write_text("SECRET_KEY=x\nEMAIL_URL=dummy://\n")
    shown = subprocess.run(  # noqa: S603 - docker compose config reads, never starts
        [docker, "compose", "-f", str(copy / "compose.yaml"), "config", "--quiet"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr


def test_compose_workers_serve_their_pools_metrics_and_checks_leave_no_samples():
    # The image turns worker metrics on (9808); without a shared directory the samples
    # of the pool's processes, where tasks run, would never reach the worker's port.
    services = _compose()["services"]

    for name in ("worker", "webhooks"):
        service = services[name]
        assert service["environment"]["PROMETHEUS_MULTIPROC_DIR"] == "/tmp", name  # noqa: S108
        assert service["tmpfs"] == ["/tmp"], name  # noqa: S108 - fresh at each start
        check = service["healthcheck"]["test"][-1]
        probe = "env -u PROMETHEUS_MULTIPROC_DIR python -m operations.worker_probe"
        assert check.startswith(probe), name
