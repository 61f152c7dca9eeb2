"""The base of every API view: principal, problem answers, idempotent POSTs."""

from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.models import IdempotencyRecord
from core.principals import Principal
from memory import idempotency
from memory.auth import get_principal


class MemgovAPIView(APIView):
    _idempotency_record: IdempotencyRecord | None = None

    def principal(self) -> Principal:
        return get_principal(self.request)

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        key = request.headers.get(idempotency.HEADER)
        if request.method == "POST" and key is not None:
            self._idempotency_record = idempotency.reserve(
                self.principal(), key.strip(), idempotency.request_hash(request)
            )

    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, idempotency.Replay):
            self._idempotency_record = None
            return exc.response
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
            idempotency.complete(self._idempotency_record, response)
            self._idempotency_record = None
        return response
