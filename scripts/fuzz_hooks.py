"""Schemathesis hooks for scripts/fuzz.py (loaded through SCHEMATHESIS_HOOKS): id path
parameters are drawn from the objects scripts/fuzz_seed.py created (the JSON file named
by FUZZ_FIXTURES), or left as generated, so id endpoints answer from real state (200,
403, 409, 422 …) as well as 404. Each Idempotency-Key is made unique, as a client makes
it: a key reused with another body is a 422 by contract (docs/api.md, Conventions), a rule
across requests that no schema can state."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import schemathesis
from hypothesis import strategies as st

_FIXTURES: dict[str, list[Any]] = (
    json.loads(Path(os.environ["FUZZ_FIXTURES"]).read_text())
    if os.environ.get("FUZZ_FIXTURES")
    else {}
)


@schemathesis.hook
def flatmap_path_parameters(
    ctx: schemathesis.HookContext, parameters: dict[str, Any] | None
) -> st.SearchStrategy[dict[str, Any] | None]:
    if not parameters:
        return st.just(parameters)
    drawn = {
        name: (st.sampled_from(_FIXTURES[name]) | st.just(value))
        if _FIXTURES.get(name)
        else st.just(value)
        for name, value in parameters.items()
    }
    return st.fixed_dictionaries(drawn)


@schemathesis.hook
def before_call(ctx: schemathesis.HookContext, case: Any, **kwargs: Any) -> None:
    """A fresh key per request: the generator draws the same few keys (``"0"``) for
    requests with different bodies. A key outside 1..200 characters is left as drawn."""
    key = (case.headers or {}).get("Idempotency-Key")
    if isinstance(key, str) and 1 <= len(key) <= 200:
        case.headers["Idempotency-Key"] = f"{key}-{uuid.uuid4().hex[:12]}"[-200:]
