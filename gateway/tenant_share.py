"""One tenant's share of a web process's request threads (issue 33, point 13).

gunicorn's gthread worker answers ``MEMGOV_WEB_THREADS`` requests at once and queues the
rest first come, first served. One agent sending many requests at once would hold every
thread, and another tenant's request would wait behind all of its queue. Here a tenant with
``TENANT_MAX_IN_FLIGHT`` requests running in this process (by default all the threads but
one; ``MEMGOV_TENANT_MAX_IN_FLIGHT``, 0 for no cap) is answered at once for the next, before
anything reads its body: 429, a problem, ``Retry-After: 1``. The thread it cannot take
serves the other tenants, and works through its queued excess at the speed of those
refusals.

Every authenticated request counts, whichever way it authenticates (issue 42, point 7):

- **An API key**: the tenant of the key as this process has seen it authenticate
  (``accounts.throttle.remember_tenant``). A key not seen yet, or made up, counts as one
  tenant of its own ("unverified") with the same cap.
- **A session cookie** (the dashboard, and the REST API from a signed-in browser): the
  tenant of the session's person, read once per session and process (one query for the
  session, one for the membership) and remembered; the session's later requests, and so
  every refusal, cost no query. A cookie with no signed-in session behind it is an
  anonymous request.

Anonymous requests (the health probes, the sign-in page, metrics) and static files are
never refused here. The count runs from the request's start until its view has answered
(a streamed body is sent after)."""

from __future__ import annotations

import hashlib
import threading
from collections import Counter
from collections.abc import Callable, Hashable
from importlib import import_module

from django.conf import settings
from django.contrib.auth import SESSION_KEY
from django.contrib.sessions.backends.base import SessionBase
from django.http import HttpRequest, HttpResponseBase

from accounts import throttle
from accounts.throttle import tenant_of_raw_key
from agent_interface.problems import problem_response
from core.models import Membership
from operations.logs import request_tenant, request_tenant_slug

UNVERIFIED = "unverified"
RETRY_AFTER_SECONDS = 1


_SESSIONS_MAX = 4096
_tenant_of_session: dict[str, int] = {}


def tenant_of(request: HttpRequest) -> Hashable:
    """The request's bucket: its key's tenant id or ``UNVERIFIED``, its signed-in session's
    tenant id, or None for an anonymous request (and a static file)."""
    if request.path.startswith(settings.STATIC_URL):
        return None  # a page's styles and scripts: no tenant's data, no query
    authorization = request.headers.get("Authorization")
    if authorization is None:
        session_key = request.COOKIES.get(settings.SESSION_COOKIE_NAME)
        return tenant_of_session(session_key) if session_key else None
    scheme, _, raw = authorization.partition(" ")
    if scheme != "Bearer" or not raw.strip():
        return UNVERIFIED
    return tenant_of_raw_key(raw.strip()) or UNVERIFIED


def tenant_of_session(session_key: str) -> int | None:
    """The tenant of the person signed in with this session, remembered by the key's hash
    after the first look (a hash: the process keeps no usable session key); None when no
    active member is signed in with it, not remembered (made-up cookies would fill the
    map, and a sign-in gets a new session key anyway)."""
    digest = hashlib.sha256(session_key.encode()).hexdigest()
    known = _tenant_of_session.get(digest)
    if known is not None:
        return known
    store: SessionBase = import_module(settings.SESSION_ENGINE).SessionStore(session_key)
    user_id = store.get(SESSION_KEY)  # an expired, deleted or made-up session reads empty
    if user_id is None:
        return None
    member = (
        Membership.objects.filter(user_id=user_id, user__is_active=True)
        .values_list("tenant_id", "tenant__slug")
        .first()
    )
    if member is None:
        return None
    tenant_id, slug = member
    throttle.remember_slug(tenant_id, slug)
    if len(_tenant_of_session) >= _SESSIONS_MAX:
        _tenant_of_session.clear()
    _tenant_of_session[digest] = tenant_id
    return tenant_id


def tenant_slug(tenant: Hashable) -> str | None:
    """A tenant id's slug for the request line, as remembered when its key or session was
    read (``throttle.remember_slug``); None for an unverified key or one not yet seen."""
    return throttle.slug_of(tenant) if isinstance(tenant, int) else None


class TenantShareMiddleware:
    """Counts each tenant's requests running in this process (module docstring)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response
        self.max_in_flight: int = settings.TENANT_MAX_IN_FLIGHT
        self._running: Counter[Hashable] = Counter()
        self._lock = threading.Lock()  # the process's request threads share the count

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if self.max_in_flight <= 0:
            return self.get_response(request)
        tenant = tenant_of(request)
        if tenant is None:
            return self.get_response(request)
        request_tenant.set(str(tenant))  # the request line names it, a refusal's too
        request_tenant_slug.set(tenant_slug(tenant))
        if not self._admit(tenant):
            return refusal()
        try:
            return self.get_response(request)
        finally:
            self._release(tenant)

    def _admit(self, tenant: Hashable) -> bool:
        with self._lock:
            if self._running[tenant] >= self.max_in_flight:
                return False
            self._running[tenant] += 1
            return True

    def _release(self, tenant: Hashable) -> None:
        with self._lock:
            self._running[tenant] -= 1
            if self._running[tenant] <= 0:
                del self._running[tenant]


def refusal() -> HttpResponseBase:
    detail = "Too many requests of your tenant at once on this server; retry in a second."
    response = problem_response(429, detail)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response
