"""The resolve input shares its field objects between requests (issue 14: DRF's copy of
them per request was a tenth of a resolve's CPU). Sharing must not let one request's
input, errors or result reach another's, however many run at once."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from agent_interface.serializers import ResolveInput


def _validate(data: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    serializer = ResolveInput(data=data)
    if serializer.is_valid():
        return True, dict(serializer.validated_data)
    return False, dict(serializer.errors)


def _request(i: int) -> dict[str, Any]:
    if i % 3 == 0:  # refused: no subject, a context value that is not text
        return {"context": {"task": ["order-a"]}, "fields": []}
    return {"subject": f"ent_{i}", "context": {"task": f"order-{i}"}, "explain": i % 2 == 0}


def test_each_instance_validates_its_own_input_with_the_same_fields():
    first, second = ResolveInput(data={}), ResolveInput(data={})

    assert first.fields is second.fields  # built once for the class
    assert _validate(_request(1)) == (
        True,
        {"subject": "ent_1", "context": {"task": "order-1"}, "explain": False},
    )
    ok, errors = _validate(_request(3))
    assert not ok and set(errors) == {"subject", "context", "fields"}
    assert _validate(_request(2))[1]["context"] == {"task": "order-2"}


def test_requests_validated_at_once_never_see_each_others_input_or_errors():
    wanted = {i: _validate(_request(i)) for i in range(300)}

    with ThreadPoolExecutor(max_workers=8) as pool:
        got = dict(enumerate(pool.map(lambda i: _validate(_request(i)), range(300))))

    assert got == wanted
