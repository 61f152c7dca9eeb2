"""The canary test's tools (issue 42, "the test that catches the next one").

A **canary** is a unique string (``CANARY-<group>-<purpose>-<hex>``, an email, a phone number, or
the id Memgov gave a row) planted in something a reader must never see. Each belongs to a
**group** that says who must not see it:

- ``other``: another tenant's (every principal of the reader's tenant);
- ``public``: the reader's tenant's, visible to all of it (only the other tenant);
- ``finance``, ``hr``: behind a label the readers lack;
- ``erased``: a person erased before the reads (her values; her ids stay, by design).

The surfaces are enumerated, not listed: every GET of the live OpenAPI schema and every
POST classified as a read (``READ_POSTS``; an unclassified POST fails the test), every MCP
tool whose annotations say ``readOnlyHint`` (a tool without the hint fails the test), every
dashboard page reachable from the navigation plus every dashboard route with an id. Their
arguments are filled by name (``Fillers``) with every planted id and string; an argument
of a name nobody taught the fillers gets all of them."""

from __future__ import annotations

import base64
import contextlib
import html
import json
import os
import re
import shutil
import subprocess
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from html.parser import HTMLParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlencode, urlsplit

import redis
from django.conf import settings
from django.db import connection
from django.test import Client
from django.urls import URLPattern

ID = re.compile(r"^[a-z]{2,5}_[0-9A-Za-z]+$")


# --- the canaries ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Canary:
    text: str
    group: str  # other | public | finance | hr | erased
    purpose: str
    is_id: bool = False


@dataclass
class Canaries:
    planted: dict[str, Canary] = field(default_factory=dict)

    def new(self, group: str, purpose: str) -> str:
        text = f"CANARY-{group}-{purpose}-{uuid.uuid4().hex[:8]}"
        self.add(text, group, purpose)
        return text

    def add(self, text: str, group: str, purpose: str, *, is_id: bool = False) -> str:
        assert text not in self.planted, text
        self.planted[text] = Canary(text, group, purpose, is_id)
        return text

    def id(self, text: str, group: str, purpose: str) -> str:
        return self.add(text, group, purpose, is_id=True)

    def of(self, *groups: str, ids: bool = True) -> list[Canary]:
        return [c for c in self.planted.values() if c.group in groups and (ids or not c.is_id)]


@dataclass(frozen=True)
class Finding:
    surface: str  # "REST GET /api/v1/memories/{memory_id}", "MCP stdio get_memory", …
    reader: str
    call: str
    canary: Canary

    def line(self) -> str:
        c = self.canary
        what = "id" if c.is_id else "text"
        return (
            f"{self.surface} | {self.reader} | {self.call} -> {c.group}/{c.purpose} {what} {c.text}"
        )


@dataclass
class Findings:
    found: list[Finding] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    calls: int = 0
    per_surface: dict[str, int] = field(default_factory=dict)

    def scan(
        self,
        surface: str,
        reader: str,
        call: str,
        text: str,
        forbidden: Iterable[Canary],
        asked: Iterable[str] = (),
    ) -> None:
        """Every forbidden canary in ``text``, except what the caller itself sent (a 404
        may name the id it was asked for)."""
        self.calls += 1
        self.per_surface[surface] = self.per_surface.get(surface, 0) + 1
        said = set(asked)
        folded = text.casefold()
        for canary in forbidden:
            if canary.text not in said and canary.text.casefold() in folded:
                self.found.append(Finding(surface, reader, call, canary))

    def merge(self, other: Findings) -> None:
        self.found += other.found
        self.errors += other.errors
        self.calls += other.calls
        for surface, count in other.per_surface.items():
            self.per_surface[surface] = self.per_surface.get(surface, 0) + count

    def report(self, canaries: Canaries, known: Mapping[str, str]) -> str:
        """One line per finding, each id in the call followed by what it is."""
        names = {c.text: f"{c.group}/{c.purpose}" for c in canaries.planted.values() if c.is_id}
        names.update(known)
        lines = set()
        for finding in self.found:
            line = finding.line()
            for text, name in names.items():
                if text in finding.call:
                    line = line.replace(text, f"{text}<{name}>", 1)
            lines.add(line)
        return "\n".join([*sorted(lines), *self.errors])

    def summary(self) -> str:
        """What was seen (group/purpose of the canary), where, by whom: one line each."""
        seen: dict[str, dict[str, set[str]]] = {}
        for f in self.found:
            where = seen.setdefault(f"{f.canary.group}/{f.canary.purpose}", {})
            where.setdefault(f.surface, set()).add(f.reader)
        lines = []
        for what, where in sorted(seen.items()):
            lines.append(f"{what}:")
            lines += [f"    {s} [{', '.join(sorted(r))}]" for s, r in sorted(where.items())]
        return "\n".join(lines)


def seen_text(body: Any) -> str:
    """What a reader is shown: the body as sent and with JSON and HTML escapes undone."""
    text = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
    return text + "\n" + html.unescape(text)


# --- filling arguments by name -----------------------------------------------------------


@dataclass
class Fillers:
    """The values each argument of a read is tried with, by its name. ``ids`` and ``texts``
    are every planted id and string; a name not known here gets all of them."""

    ids: list[str]
    texts: list[str]
    names: list[str]  # entity names and aliases, field names: what a caller might ask for
    terms: list[str]  # search words
    refs: list[str]
    fields: list[str]
    tasks: list[str]
    kinds: list[str]
    jobs: list[str]
    owners: list[str]

    def by_prefix(self, prefix: str) -> list[str]:
        return [i for i in self.ids if i.startswith(prefix)]

    def values(self, name: str, schema: Mapping[str, Any]) -> list[Any] | None:
        """The values to try, or None: an optional argument of this name is left out."""
        if schema.get("enum"):
            return list(schema["enum"])
        known: dict[str, Callable[[], list[Any]]] = {
            "memory_id": lambda: self.by_prefix("mem_"),
            "entity_id": lambda: self.by_prefix("ent_"),
            "subject": lambda: self.by_prefix("ent_"),
            "source_id": lambda: self.by_prefix("src_"),
            "erasure_id": lambda: self.by_prefix("era_"),
            "webhook_id": lambda: self.by_prefix("whk_"),
            "job_id": lambda: self.jobs,
            "task_id": lambda: self.tasks,
            "target": lambda: self.ids,
            "number": lambda: [1, 2],
            "name": lambda: self.names,
            "q": lambda: self.terms,
            "external_ref": lambda: self.refs,
            "field": lambda: self.fields,
            "fields": lambda: [[f] for f in self.fields],
            "kind": lambda: self.kinds,
            "owner": lambda: self.owners,
            "subjects": lambda: [[s] for s in [*self.by_prefix("ent_"), *self.names]],
        }
        if name in known:
            return known[name]()
        return None

    def everything(self) -> list[Any]:
        return [*self.ids, *self.texts]


CONSTANTS: dict[str, Any] = {"explain": True, "context": {}}
# Paging is not a way in; a ``task_id`` on resolve or context records a retrieval (a
# write) under the probe's own string, which the next read would then show back.
OPTIONAL_LEFT_OUT = frozenset({"limit", "cursor", "idempotency_key", "task_id"})


def argument_sets(
    properties: Mapping[str, Mapping[str, Any]], required: Iterable[str], fillers: Fillers
) -> list[dict[str, Any]]:
    """Calls that try each value of each argument: the required ones filled (the first
    varied, the others at their first value), then each optional one varied alone."""
    required = list(required)
    base: dict[str, Any] = {}
    varied: list[tuple[str, list[Any]]] = []
    for name in required:
        values = fillers.values(name, properties.get(name, {}))
        if values is None:
            values = [CONSTANTS[name]] if name in CONSTANTS else fillers.everything()
        if not values:
            return []
        base[name] = values[0]
        varied.append((name, values))
    for name, value in CONSTANTS.items():
        if name in properties and name not in base:
            base[name] = value
    for name, schema in properties.items():
        if name in base or name in OPTIONAL_LEFT_OUT:
            continue
        values = fillers.values(name, schema)
        if values:
            varied.append((name, values))
    sets = [dict(base)] if not required else []
    for name, values in varied:
        for value in values:
            sets.append({**base, name: value})
    unique: dict[str, dict[str, Any]] = {json.dumps(s, sort_keys=True): s for s in sets}
    return list(unique.values())


# --- REST, from the live OpenAPI schema --------------------------------------------------

# POST operations that only read. Every other POST of the schema must be in WRITE_POSTS: an
# operation in neither fails the test, so a new endpoint is classified (and then probed).
READ_POSTS = {"/api/v1/resolve", "/api/v1/context", "/api/v1/entities/match"}
WRITE_POSTS = {
    "/api/v1/sources",
    "/api/v1/sources/{source_id}/revoke",
    "/api/v1/sources/{source_id}/visibility",
    "/api/v1/entities",
    "/api/v1/entities/{entity_id}/aliases",
    "/api/v1/entities/{entity_id}/erase",
    "/api/v1/memories",
    "/api/v1/memories/{memory_id}/versions",
    "/api/v1/memories/{memory_id}/approve",
    "/api/v1/memories/{memory_id}/reject",
    "/api/v1/memories/{memory_id}/retire",
    "/api/v1/memories/{memory_id}/recheck",
    "/api/v1/memories/{memory_id}/scenarios",
    "/api/v1/memories/{memory_id}/scenarios/{scenario_id}/remove",
    "/api/v1/memories/{memory_id}/link-subject",
    "/api/v1/memories/{memory_id}/clarify",
    "/api/v1/policy",
    "/api/v1/policy/revalidate",
    "/api/v1/webhooks",
    "/api/v1/webhooks/{webhook_id}/rotate-secret",
    "/api/v1/webhooks/{webhook_id}/enable",
}


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    parameters: tuple[Mapping[str, Any], ...]
    body: Mapping[str, Any] | None  # the request body's JSON Schema, $refs resolved


def _resolved(schema: Any, document: Mapping[str, Any], depth: int = 0) -> Any:
    if depth > 20:
        return schema
    if isinstance(schema, dict):
        if "$ref" in schema:
            target: Any = document
            for part in schema["$ref"].lstrip("#/").split("/"):
                target = target[part]
            return _resolved(target, document, depth + 1)
        return {k: _resolved(v, document, depth + 1) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_resolved(v, document, depth + 1) for v in schema]
    return schema


def read_operations(document: Mapping[str, Any]) -> tuple[list[Operation], list[str]]:
    """Every read of the schema, and every operation nobody classified."""
    reads: list[Operation] = []
    unclassified: list[str] = []
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method not in ("get", "post", "put", "patch", "delete"):
                continue
            if method == "post" and path not in READ_POSTS:
                if path not in WRITE_POSTS:
                    unclassified.append(f"POST {path}")
                continue
            if method in ("put", "patch", "delete"):
                continue  # writes by their method
            body = None
            if method == "post":
                content = operation.get("requestBody", {}).get("content", {})
                body = _resolved(content.get("application/json", {}).get("schema", {}), document)
            parameters = tuple(_resolved(p, document) for p in operation.get("parameters", []))
            reads.append(Operation(method.upper(), path, parameters, body))
    return reads, unclassified


def rest_calls(operation: Operation, fillers: Fillers) -> Iterator[tuple[str, Any, list[str]]]:
    """(url, body, values sent) for every call of a read operation."""
    path_params = [p for p in operation.parameters if p["in"] == "path"]
    query = {p["name"]: p for p in operation.parameters if p["in"] == "query"}
    paths: list[tuple[str, list[str]]] = [(operation.path, [])]
    for parameter in path_params:
        name = parameter["name"]
        values = fillers.values(name, parameter.get("schema", {})) or fillers.everything()
        paths = [
            (p.replace("{" + name + "}", str(v)), [*sent, str(v)])
            for p, sent in paths
            for v in values
        ]
    if operation.method == "POST":
        body = operation.body or {}
        for args in argument_sets(body.get("properties", {}), body.get("required", []), fillers):
            for path, sent in paths:
                yield path, args, [*sent, *_strings(args)]
        return
    required = [n for n, p in query.items() if p.get("required")]
    properties = {n: p.get("schema", {}) for n, p in query.items()}
    for args in argument_sets(properties, required, fillers):
        args = {k: v for k, v in args.items() if k not in CONSTANTS or k in query}
        for path, sent in paths:
            url = f"{path}?{urlencode(args)}" if args else path
            yield url, None, [*sent, *_strings(args)]


def _strings(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return [str(value)]


def response_text(response: Any) -> str:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content).decode("utf-8", "replace")
    return str(response.content.decode("utf-8", "replace"))


# --- the dashboard -------------------------------------------------------------------------


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value and name in ("href", "hx-get", "data-href"):
                self.links.append(value)


SKIPPED = ("/static/", "/admin/", "/accounts/", "/api/", "/media/", "/healthz", "/readyz")


def links(page: str, here: str) -> list[str]:
    parser = _Links()
    parser.feed(page)
    found = []
    for link in parser.links:
        parts = urlsplit(link)
        if parts.scheme or parts.netloc or link.startswith("#"):
            continue
        path = parts.path or urlsplit(here).path
        if not path.startswith("/") or path.startswith(SKIPPED):
            continue
        found.append(path + (f"?{parts.query}" if parts.query else ""))
    return found


def crawl(client: Client, start: str = "/", depth: int = 3, limit: int = 400) -> dict[str, Any]:
    """Every page reachable by GET from ``start`` within ``depth`` links: url → response."""
    pages: dict[str, Any] = {}
    frontier = [start]
    for _ in range(depth + 1):
        following: list[str] = []
        for url in frontier:
            if url in pages or len(pages) >= limit:
                continue
            response = client.get(url)
            pages[url] = response
            if response.status_code == 200 and "html" in response.get("Content-Type", ""):
                following += links(response_text(response), url)
        frontier = following
    return pages


def dashboard_routes(patterns: Iterable[Any], fillers: Fillers) -> Iterator[tuple[str, list[str]]]:
    """Every dashboard route with parameters, filled with every planted id by its name."""
    for pattern in patterns:
        if not isinstance(pattern, URLPattern):
            continue
        route = str(pattern.pattern)
        names = re.findall(r"<(?:\w+:)?(\w+)>", route)
        if not names:
            continue
        urls: list[tuple[str, list[str]]] = [("/" + route, [])]
        for name in names:
            values = fillers.values(name, {}) or fillers.everything()
            urls = [
                (re.sub(rf"<(?:\w+:)?{name}>", str(v), u, count=1), [*sent, str(v)])
                for u, sent in urls
                for v in values
            ]
        yield from urls


# --- at rest: PostgreSQL and Redis ------------------------------------------------------


def pg_dump() -> str:
    """The whole test database as ``pg_dump`` writes it (schema and data)."""
    s = connection.settings_dict
    binary = shutil.which("pg_dump")
    assert binary, "pg_dump is not installed (the PostgreSQL client)"
    command = [binary, "--no-owner", "-h", s["HOST"] or "127.0.0.1", "-p", str(s["PORT"] or 5432)]
    command += ["-U", s["USER"], s["NAME"]]
    env = {**os.environ, "PGPASSWORD": s["PASSWORD"] or ""}
    done = subprocess.run(command, capture_output=True, env=env, timeout=120, check=False)  # noqa: S603
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode("utf-8", "replace")


def dump_tables(dump: str) -> Iterator[tuple[str, str]]:
    """The dump cut at each table's ``COPY`` block: (table, its rows), so that a finding
    names the table it was found in."""
    name, lines = "(schema)", list[str]()
    for line in dump.splitlines():
        if line.startswith("COPY "):
            yield name, "\n".join(lines)
            name, lines = line.split()[1], []
        lines.append(line)
    yield name, "\n".join(lines)


def redis_urls() -> list[str]:
    """Every Redis database this process and the servers it started use."""
    urls = {str(settings.CACHE_URL), str(settings.CELERY_BROKER_URL)}
    redis_url = getattr(settings, "REDIS_URL", "") or ""
    if redis_url:
        urls.add(str(redis_url))
    return sorted(u for u in urls if u.startswith(("redis://", "rediss://")))


def _expanded(raw: bytes) -> list[bytes]:
    """A value, and a Celery/kombu message's base64 body decoded (what a broker holds)."""
    out = [raw]
    try:
        message = json.loads(raw)
    except ValueError:
        return out
    if isinstance(message, dict) and isinstance(message.get("body"), str):
        with contextlib.suppress(ValueError):
            out.append(base64.b64decode(message["body"], validate=True))
    return out


def redis_dump(url: str) -> Iterator[tuple[str, bytes]]:
    """(key, bytes) for every key of the database and every part of its value."""
    client: Any = redis.Redis.from_url(url, socket_timeout=5)
    try:
        for key in client.scan_iter(count=1000):
            kind = client.type(key).decode()
            parts: list[bytes] = [key]
            if kind == "string":
                parts.append(client.get(key) or b"")
            elif kind == "hash":
                for k, v in client.hgetall(key).items():
                    parts += [k, v]
            elif kind == "list":
                parts += client.lrange(key, 0, -1)
            elif kind == "set":
                parts += list(client.smembers(key))
            elif kind == "zset":
                parts += [m for m, _ in client.zrange(key, 0, -1, withscores=True)]
            elif kind == "stream":
                for _, entry in client.xrange(key):
                    for k, v in entry.items():
                        parts += [k, v]
            name = key.decode("utf-8", "replace")
            for part in parts:
                for piece in _expanded(part):
                    yield name, piece
    finally:
        client.close()


# --- webhook bodies --------------------------------------------------------------------


@dataclass
class Receiver:
    """A live HTTP receiver on loopback that keeps every body it was sent (answering 200);
    what a receiver is told is the point here, not the signature (tests/webhooks)."""

    url: str = ""
    bodies: list[tuple[str, bytes]] = field(default_factory=list)  # (webhook-id, body)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def all(self) -> list[tuple[str, bytes]]:
        with self.lock:
            return list(self.bodies)


@contextmanager
def live_receiver() -> Iterator[Receiver]:
    receiver = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with receiver.lock:
                receiver.bodies.append((self.headers.get("webhook-id", "?"), body))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}/hooks/canary"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
