"""The base of every API view: principal, problem answers, idempotent POSTs."""

from __future__ import annotations

from typing import Any, ClassVar

from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agent_interface.auth import get_principal
from agent_interface.idempotency import keep_answer, replayed, request_hash
from agent_interface.renderers import JSONOnlyNegotiation
from agent_interface.serializers import unknown_name
from core.errors import InvalidContent
from core.models import IdempotencyRecord
from core.principals import Principal
from memory import idempotency


class MemgovAPIView(APIView):
    # The query parameters a GET takes (docs/api.md), and the families of them by prefix
    # (``scope.<dim>``); any other parameter, and one given twice, is a 422.
    query_parameters: ClassVar[tuple[str, ...]] = ()
    query_prefixes: ClassVar[tuple[str, ...]] = ()
    _idempotency_record: IdempotencyRecord | None = None
    content_negotiation_class = JSONOnlyNegotiation

    def principal(self) -> Principal:
        return get_principal(self.request)

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        self._check_query(request)
        key = request.headers.get(idempotency.HEADER)
        if request.method == "POST" and key is not None:
            self._idempotency_record = idempotency.reserve(
                self.principal(), key.strip(), request_hash(request)
            )

    def _check_query(self, request: Request) -> None:
        """A mistyped filter would widen the answer silently (``sbject`` lists everything)."""
        reads = request.method in ("GET", "HEAD")
        known = self.query_parameters if reads else ()
        prefixes = self.query_prefixes if reads else ()
        errors: dict[str, list[str]] = {}
        for name, values in request.query_params.lists():
            if name not in known and not name.startswith(prefixes):
                errors[name] = [unknown_name(name, known, "a query parameter of this operation")]
            elif len(values) > 1:
                errors[name] = ["is given more than once"]
        if errors:
            raise InvalidContent(errors)

    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, idempotency.Replay):
            self._idempotency_record = None
            return replayed(exc.answer)
        try:
            return super().handle_exception(exc)
        except Exception:
            if self._idempotency_record is not None:
                idempotency.release(self._idempotency_record)
                self._idempotency_record = None
            raise

    def finalize_response(self, request: Request, response: Any, *args: Any, **kwargs: Any) -> Any:
        response = super().finalize_response(request, response, *args, **kwargs)
        if self._idempotency_record is not None and isinstance(response, Response):
            keep_answer(self._idempotency_record, response)
            self._idempotency_record = None
        return response
