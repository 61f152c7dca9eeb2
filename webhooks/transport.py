"""One POST to a webhook receiver, bounded and pinned (issue 33, point 9).

Bounded: a deadline covers connecting, the TLS handshake, sending and the whole answer's
head. httpx's timeouts are per socket operation, so a receiver sending a byte every few
seconds would hold a worker for as long as it likes; here every operation gets at most
what is left of the deadline.

Pinned: the connection goes to the addresses ``webhooks.addresses`` resolved and checked,
never to a second answer of the resolver (DNS rebinding). The URL keeps the name, so the
Host header, TLS SNI and certificate verification are for the name.

Both are an httpcore network backend (https://www.encode.io/httpcore/network-backends/),
httpcore's documented way to replace how connections are opened; httpx does not take one,
so the request is made with httpcore, the library httpx is built on."""

from __future__ import annotations

import ssl
import time
import typing

import httpcore
import httpx

# What an attempt can fail with, short of a programming error; the first when its time
# is up.
TIMED_OUT = httpcore.TimeoutException
FAILURES = (
    httpcore.TimeoutException,
    httpcore.NetworkError,
    httpcore.ProtocolError,
    httpcore.UnsupportedProtocol,
)


class DeadlinePassed(httpcore.TimeoutException):
    """The attempt's deadline passed (whatever it was waiting for)."""


def post(
    url: str,
    *,
    addresses: typing.Sequence[str],
    body: bytes,
    headers: dict[str, str],
    deadline: float,
) -> int:
    """POST ``body`` to ``url`` over a connection to one of ``addresses`` and return the
    status code; the answer's body is never read. ``deadline`` is a ``time.monotonic()``
    moment; past it, the attempt raises a ``httpcore.TimeoutException``."""
    backend = PinnedBackend(addresses, deadline)
    left = backend.left(None, DeadlinePassed)
    timeouts = {"connect": left, "read": left, "write": left, "pool": left}
    with (
        httpcore.ConnectionPool(ssl_context=_ssl_context(), network_backend=backend) as pool,
        pool.stream(
            "POST",
            url,
            headers=list(headers.items()),
            content=body,
            extensions={"timeout": timeouts},
        ) as response,
    ):
        return int(response.status)


def _ssl_context() -> ssl.SSLContext:
    """What httpx would verify with: certifi's CAs, or SSL_CERT_FILE / SSL_CERT_DIR."""
    return httpx.create_ssl_context()


def show(address: str, port: int) -> str:
    return f"[{address}]:{port}" if ":" in address else f"{address}:{port}"


class PinnedBackend(httpcore.NetworkBackend):
    """Connects to the checked addresses in turn, whatever host the request names, and
    hands out streams that stop at the deadline."""

    def __init__(self, addresses: typing.Sequence[str], deadline: float) -> None:
        self.addresses = tuple(addresses)
        self.deadline = deadline
        self.system = httpcore.SyncBackend()

    def left(self, timeout: float | None, timed_out: type[Exception]) -> float:
        """The time an operation may take: its own timeout, cut to the deadline."""
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise timed_out("the deadline passed")
        return remaining if timeout is None else min(timeout, remaining)

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        if not self.addresses:
            raise httpcore.ConnectError(f"no address for {host}")
        failures = []
        options = list(socket_options or ())
        for address in self.addresses:
            try:
                stream = self.system.connect_tcp(
                    address,
                    port,
                    timeout=self.left(timeout, httpcore.ConnectTimeout),
                    local_address=local_address,
                    socket_options=options,
                )
            except httpcore.ConnectError as exc:
                failures.append(f"{show(address, port)}: {exc}")
                continue
            return DeadlineStream(stream, self)
        raise httpcore.ConnectError("; ".join(failures))

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        raise httpcore.UnsupportedProtocol("webhooks are posted over TCP only")

    def sleep(self, seconds: float) -> None:
        time.sleep(min(seconds, max(self.deadline - time.monotonic(), 0.0)))


class DeadlineStream(httpcore.NetworkStream):
    """A connection whose every read, write and handshake ends by the deadline."""

    def __init__(self, stream: httpcore.NetworkStream, backend: PinnedBackend) -> None:
        self.stream = stream
        self.backend = backend

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self.stream.read(max_bytes, self.backend.left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.stream.write(buffer, self.backend.left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self.stream.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        # server_hostname is the URL's name: SNI and the certificate check are for it.
        secured = self.stream.start_tls(
            ssl_context, server_hostname, self.backend.left(timeout, httpcore.ConnectTimeout)
        )
        return DeadlineStream(secured, self.backend)

    def get_extra_info(self, info: str) -> typing.Any:
        return self.stream.get_extra_info(info)
